"""Exact JSON: numbers keep the digits they were written with, both ways.

sgam stores a value's numbers as written (``61.50`` stays ``61.50``,
``12345678901234567890`` is not rounded to a float's ``12345678901234567000``).
Python's ``json`` module would read ``61.50`` as the float ``61.5``; this
module reads every number without a fraction or exponent as an ``int``
(exact at any size) and every other number as a :class:`Number`, a
:class:`decimal.Decimal` that also remembers its text, so that writing it
back sends the same digits (``1e2`` stays ``1e2``, not ``1E+2``).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = ["Number", "loads", "dumps"]


class Number(Decimal):
    """A JSON number read exactly: a :class:`~decimal.Decimal` that keeps its text.

    It compares, hashes and computes as the Decimal it is (``Number("61.50") ==
    Decimal("61.5")``); :func:`dumps` writes it back as the text it was read
    from, and ``str()`` gives that text too. Arithmetic gives plain Decimals.
    """

    __slots__ = ("_text",)
    _text: str

    def __new__(cls, text: str) -> Number:
        text = str(text)
        self = super().__new__(cls, text)
        if not self.is_finite():
            raise ValueError(f"{text!r} is not a finite JSON number")
        self._text = text
        return self

    @property
    def text(self) -> str:
        """The number as it was written."""
        return self._text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Number('{self._text}')"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Number, (self._text,))

    def __copy__(self) -> Number:
        return self

    def __deepcopy__(self, memo: Any) -> Number:
        return self


def _parse_int(text: str) -> int | Number:
    # "-0" is a number JSON can hold and an int cannot: keep its sign.
    if text == "-0":
        return Number(text)
    return int(text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str | bytes) -> Any:
    """Read JSON with every number exact: ``int`` for integers, :class:`Number` otherwise."""
    return json.loads(text, parse_float=Number, parse_int=_parse_int, parse_constant=_no_constant)


def dumps(value: Any) -> str:
    """Write ``value`` as compact JSON, numbers exactly.

    Accepts what :func:`loads` returns and the usual Python values: dicts with
    string keys, lists and tuples, strings, booleans, None, ints, Decimals
    (written with their digits; a :class:`Number` as it was read), finite
    floats (their shortest round-trip form), timezone-aware datetimes (RFC
    3339), dates, and pydantic models (their fields by alias, unset ones left
    out).
    """
    out: list[str] = []
    _write(value, out, 0)
    return "".join(out)


def _write(v: Any, out: list[str], depth: int) -> None:
    if depth > 512:
        raise ValueError("value is nested too deeply")
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, str):
        out.append(json.dumps(v, ensure_ascii=False))
    elif isinstance(v, Number):
        out.append(v._text)
    elif isinstance(v, int):
        out.append(int.__repr__(v))
    elif isinstance(v, Decimal):
        if not v.is_finite():
            raise ValueError(f"{v} is not a finite number: JSON cannot hold it")
        out.append(str(v))
    elif isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"{v} is not a finite number: JSON cannot hold it")
        out.append(float.__repr__(v))
    elif isinstance(v, Mapping):
        out.append("{")
        first = True
        for k, item in v.items():
            if not isinstance(k, str):
                raise TypeError(f"object keys must be strings, not {type(k).__name__}")
            if not first:
                out.append(",")
            first = False
            out.append(json.dumps(k, ensure_ascii=False))
            out.append(":")
            _write(item, out, depth + 1)
        out.append("}")
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _write(item, out, depth + 1)
        out.append("]")
    elif isinstance(v, _dt.datetime):
        out.append(json.dumps(format_instant(v)))
    elif isinstance(v, _dt.date):
        out.append(json.dumps(v.isoformat()))
    elif hasattr(v, "model_dump"):  # a pydantic model
        _write(v.model_dump(mode="python", by_alias=True, exclude_unset=True), out, depth)
    else:
        raise TypeError(f"{type(v).__name__} is not a JSON value")


def format_instant(t: _dt.datetime | str) -> str:
    """An instant as the API takes it: RFC 3339 with an offset.

    A string is passed on as it is (the server checks it); a naive datetime
    is refused, since sgam cannot order an instant without an offset.
    """
    if isinstance(t, str):
        return t
    if not isinstance(t, _dt.datetime):
        raise TypeError(f"an instant is a datetime or an RFC 3339 string, not {type(t).__name__}")
    if t.tzinfo is None or t.utcoffset() is None:
        raise ValueError("a datetime without a timezone is not an instant: give it one (datetime.now(timezone.utc))")
    s = t.isoformat()
    return s[:-6] + "Z" if s.endswith("+00:00") else s
