"""Values stay exact: no JSON number the server returns goes through a float."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

import sgam

T1 = dt.datetime(2026, 6, 1, 9, tzinfo=dt.timezone.utc)
# Keys in order: the server stores a value in canonical form, keys sorted.
TEXT = ('{"big":12345678901234567890,"e":1e2,"flag":true,"huge":1.7976931348623157e308,'
        '"list":[1.10,2,{"x":-3.000}],"neg0":-0,"negz":-0.0,"none":null,"price":61.50,"s":"61.50",'
        '"tiny":0.00000015}')


def test_loads_and_dumps_keep_the_digits() -> None:
    v = sgam.loads(TEXT)
    assert sgam.dumps(v) == TEXT
    assert isinstance(v["price"], sgam.Number) and isinstance(v["price"], Decimal)
    assert v["price"] == Decimal("61.5") and str(v["price"]) == "61.50" and v["price"].text == "61.50"
    assert v["big"] == 12345678901234567890 and type(v["big"]) is int
    assert str(v["e"]) == "1e2" and v["e"] == 100
    assert v["s"] == "61.50"


def test_dumps_of_python_values() -> None:
    assert sgam.dumps({"f": 0.1, "d": Decimal("1.10"), "i": 10**30, "t": (1, "a"), "u": "ü\n"}) == \
        '{"f":0.1,"d":1.10,"i":1000000000000000000000000000000,"t":[1,"a"],"u":"ü\\n"}'
    for bad in (float("nan"), float("inf"), Decimal("NaN")):
        with pytest.raises(ValueError):
            sgam.dumps(bad)
    with pytest.raises(ValueError):
        sgam.dumps(dt.datetime(2026, 1, 1))  # naive: not an instant
    assert sgam.dumps(T1) == '"2026-06-01T09:00:00Z"'


def test_a_value_round_trips_through_the_server(alpha: sgam.Client, uid: str) -> None:
    value = sgam.loads(TEXT)
    w = alpha.facts.assert_(uid, "exact", value, source="e1", valid_from=T1)
    assert w.fact is not None and sgam.dumps(w.fact.value) == TEXT
    assert sgam.dumps(alpha.subjects.get(uid, "exact").fact.value) == TEXT  # type: ignore[union-attr]
    assert sgam.dumps(alpha.subjects.state(uid)[0].value) == TEXT
    assert sgam.dumps(alpha.subjects.history(uid, "exact")[0].value) == TEXT
    assert sgam.dumps(alpha.facts.trace(w.fact.fact_id).chain[0].value) == TEXT  # type: ignore[arg-type]
    ctx = alpha.recall("exact?", subjects=[uid])
    assert sgam.dumps(ctx.facts[0].value) == TEXT
    # Written again as read: the same value, an idempotent repeat, not a conflict.
    again = alpha.facts.assert_(uid, "exact", w.fact.value, source="e2", valid_from=T1)
    assert again.no_change


def test_decimals_and_big_integers_are_sent_as_written(alpha: sgam.Client, uid: str) -> None:
    w = alpha.facts.assert_(uid, "n", [Decimal("0.10"), 2**70, -(2**70)], source="e1", valid_from=T1)
    assert sgam.dumps(w.fact.value) == "[0.10,1180591620717411303424,-1180591620717411303424]"  # type: ignore[union-attr]


def test_scores_are_decimals(alpha: sgam.Client, uid: str) -> None:
    alpha.episodes.add(f"The word {uid} appears here.", extract="none")
    ctx = alpha.recall(f"Where does {uid} appear?")
    assert ctx.evidence and all(isinstance(e.score, Decimal) for e in ctx.evidence)
