"""What the synchronous and the asynchronous client share: configuration,
the description of one operation, how a request is built, how an answer or
an error is read, and when a request is tried again."""

from __future__ import annotations

import datetime as _dt
import email.utils
import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from . import errors
from ._json import dumps, loads
from ._version import __version__

log = logging.getLogger("sgam")

DEFAULT_URL = "http://127.0.0.1:7420"
DEFAULT_TIMEOUT = 60.0


class _Secret:
    """An API key that never shows itself: not in repr, str, format or pickle."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None) -> None:
        self._value = value or None

    def get(self) -> str | None:
        return self._value

    def __bool__(self) -> bool:
        return self._value is not None

    def __repr__(self) -> str:
        return "<hidden>" if self._value else "<none>"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __reduce__(self) -> Any:
        raise TypeError("an sgam API key is not pickled")


@dataclass(frozen=True)
class Retry:
    """When and how a request is tried again.

    Only requests that are safe to repeat are retried (see :attr:`Op.idempotent`):
    reads, recall, a fact or set write (the same value at the same instant is
    the ledger's idempotent repeat) and an episode with an ``episode_id`` or an
    ``idempotency_key``. They are retried after a 429 or a 503 and after a
    transport failure (no answer came), at most ``max_retries`` times; the
    wait is the server's ``Retry-After`` when it sends one, else exponential
    backoff from ``backoff`` seconds, doubled each time, at most
    ``max_backoff``, with jitter. A ``Retry-After`` longer than
    ``max_retry_after`` is not waited for: the error is raised at once, with
    its ``retry_after``. Any other request, or any other error, is raised at
    once.
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0

    def backoff_for(self, retry: int) -> float:
        """The wait before retry number ``retry`` (0 for the first) without a Retry-After."""
        base = min(self.max_backoff, self.backoff * (2**retry))
        return base / 2 + random.uniform(0, base / 2)


NO_RETRY = Retry(max_retries=0)


@dataclass
class Op:
    """One call of one operation of the API."""

    method: str
    route: str
    """The route's pattern, as in the OpenAPI document: ``/v1/subjects/{subject}``."""
    path_params: Mapping[str, str | int] = field(default_factory=dict)
    query: Mapping[str, Any] = field(default_factory=dict)
    json: Any = None
    """A body to send as JSON (exact numbers); ``None``: see ``content``."""
    content: str | None = None
    content_type: str | None = None
    parse: Callable[[Any], Any] | None = None
    """Reads the decoded JSON answer into the result; ``None``: the JSON as it is."""
    text: bool = False
    """The answer is text (``/metrics``), not JSON."""
    idempotent: bool = False
    """Safe to send again after a 429, a 503 or a lost answer."""
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.method} {self.route}"

    def path(self) -> str:
        p = self.route
        for k, v in self.path_params.items():
            s = str(v)
            if s == "":
                # An empty id would name another route.
                raise errors.Invalid("is required", field=k, operation=self.name)
            seg = quote(s, safe="")
            if s in (".", ".."):
                # A bare dot segment would be cleaned away by the router.
                seg = seg.replace(".", "%2E")
            p = p.replace("{" + k + "}", seg)
        return p


def env_url(base_url: str | None) -> str:
    url = base_url or os.environ.get("SGAM_URL") or DEFAULT_URL
    return url.rstrip("/")


def env_key(api_key: str | None) -> _Secret:
    return _Secret(api_key if api_key is not None else os.environ.get("SGAM_API_KEY"))


def make_timeout(timeout: float | httpx.Timeout | None) -> httpx.Timeout:
    if isinstance(timeout, httpx.Timeout):
        return timeout
    if timeout is None:
        return httpx.Timeout(None)
    return httpx.Timeout(timeout, connect=min(10.0, timeout))


def instant(t: _dt.datetime | str | None, default_now: bool = False) -> str | None:
    """An instant as the API takes it (RFC 3339 with an offset)."""
    from ._json import format_instant

    if t is None:
        if not default_now:
            return None
        t = _dt.datetime.now(_dt.timezone.utc)
    return format_instant(t)


def query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, _dt.datetime):
        return instant(v) or ""
    return str(v)


class Base:
    """Configuration and the request/answer logic both clients share."""

    def _configure(
        self,
        base_url: str | None,
        api_key: str | None,
        timeout: float | httpx.Timeout | None,
        retry: Retry | None,
        user_agent: str | None,
    ) -> None:
        self._base_url = env_url(base_url)
        self._key = env_key(api_key)
        self._timeout = make_timeout(timeout)
        self._retry = retry if retry is not None else Retry()
        self._user_agent = user_agent or f"sgam-python/{__version__}"

    @property
    def base_url(self) -> str:
        """The server's URL (``SGAM_URL``, default ``http://127.0.0.1:7420``)."""
        return self._base_url

    @property
    def retry(self) -> Retry:
        return self._retry

    def __repr__(self) -> str:
        key = "set" if self._key else "none"
        return f"{type(self).__name__}(base_url={self._base_url!r}, api_key=<{key}>)"

    # Building a request.

    def _request_parts(self, op: Op) -> tuple[str, str, dict[str, str], dict[str, str], bytes | None]:
        headers = {"Accept": "application/json", "User-Agent": self._user_agent}
        headers.update(op.headers)
        key = self._key.get()
        if key:
            headers["Authorization"] = "Bearer " + key
        body: bytes | None = None
        if op.json is not None:
            body = dumps(op.json).encode()
            headers["Content-Type"] = "application/json"
        elif op.content is not None:
            body = op.content.encode()
            headers["Content-Type"] = op.content_type or "text/plain; charset=utf-8"
        params = {k: query_value(v) for k, v in op.query.items() if v is not None}
        return op.method, self._base_url + op.path(), headers, params, body

    # Reading an answer.

    def _result(self, op: Op, resp: httpx.Response) -> Any:
        """The result of a 2xx answer, or the error of any other (raised)."""
        rid = resp.headers.get("X-Request-Id")
        if resp.status_code >= 300:
            raise self._error(op, resp)
        if op.text:
            return resp.text
        try:
            data = loads(resp.content) if resp.content else None
        except ValueError as e:
            raise errors.UnexpectedResponse(
                f"the answer is not JSON: {e}", status=resp.status_code, request_id=rid, operation=op.name
            ) from None
        if op.parse is None:
            return data
        try:
            return op.parse(data)
        except (ValidationError, TypeError, KeyError) as e:
            raise errors.UnexpectedResponse(
                f"the answer is not the documented shape: {e}", status=resp.status_code, request_id=rid, operation=op.name
            ) from None

    def _error(self, op: Op, resp: httpx.Response) -> errors.Error:
        status = resp.status_code
        rid = resp.headers.get("X-Request-Id")
        retry_after = parse_retry_after(resp.headers.get("Retry-After"))
        detail: Mapping[str, Any] = {}
        try:
            data = loads(resp.content) if resp.content else None
            if isinstance(data, Mapping) and isinstance(data.get("error"), Mapping):
                detail = data["error"]
        except ValueError:
            pass
        code = detail.get("code") if isinstance(detail.get("code"), str) else None
        message = detail.get("message")
        if not isinstance(message, str) or not message:
            text = resp.text.strip()
            message = (text[:200] if text else "") or f"HTTP {status}"

        def opt(name: str) -> str | None:
            v = detail.get(name)
            return v if isinstance(v, str) else None

        pointer, rule = opt("pointer"), opt("rule")
        if rule and pointer is None:
            # The server leaves an empty pointer out: with a rule, it is "",
            # the whole value.
            pointer = ""
        cls = errors.error_for(status, code)
        return cls(
            message,
            code=code or cls.default_code,
            status=status,
            field=opt("field"),
            pointer=pointer,
            rule=rule,
            retry_after=retry_after,
            request_id=rid,
            operation=op.name,
        )

    # Trying again.

    def _retry_wait(self, op: Op, retries: int, err: errors.Error) -> float | None:
        """How long to wait before sending ``op`` again after ``err``, or None: raise it."""
        if not op.idempotent or retries >= self._retry.max_retries:
            return None
        if isinstance(err, errors.TransportError):
            return self._retry.backoff_for(retries)
        if err.status not in (429, 503):
            return None
        if err.retry_after is not None:
            if err.retry_after > self._retry.max_retry_after:
                return None
            return max(0.0, err.retry_after)
        return self._retry.backoff_for(retries)

    def _log_retry(self, op: Op, retries: int, wait: float, err: errors.Error) -> None:
        why = f"answered {err.status}" if err.status is not None else f"failed ({err.message})"
        log.info(
            "sgam: %s %s; retrying in %.2f s (retry %d of %d)",
            op.name, why, wait, retries + 1, self._retry.max_retries,
        )

    @staticmethod
    def _transport_error(op: Op, e: Exception) -> errors.TransportError:
        kind = type(e).__name__
        msg = str(e) or kind
        return errors.TransportError(f"{kind}: {msg}", operation=op.name)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(int(value)))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return max(0.0, (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds())


def monotonic() -> float:
    return time.monotonic()
