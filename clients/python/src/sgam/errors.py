"""The errors of the sgam API, one class per error code, all under :class:`Error`.

Every error the server answers is ``{"error": {"code", "field", "pointer",
"rule", "message"}}`` with one HTTP status per code (docs/api.md, "Errors"):

=================  ======================  ===================================
code               class                   status
=================  ======================  ===================================
invalid            :class:`Invalid`        400 (413 body too large, 408 body
                                           too slow, 405 method)
unauthenticated    :class:`Unauthorized`   401
forbidden          :class:`Forbidden`      403
not_found          :class:`NotFound`       404
conflict           :class:`Conflict`       409
unavailable        :class:`RateLimited`    429, with ``retry_after``
unavailable        :class:`Unavailable`    503, ``retry_after`` when sent
internal           :class:`ServerError`    500
=================  ======================  ===================================

A failure to reach the server at all is a :class:`TransportError`, and an
answer that is not the API's (a proxy's HTML page, say) an
:class:`UnexpectedResponse`. No error ever holds the API key: not in its
message, its ``repr`` or its attributes.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Error",
    "Invalid",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "Unavailable",
    "RateLimited",
    "ServerError",
    "TransportError",
    "UnexpectedResponse",
    "error_for",
]


class Error(Exception):
    """Any failure of an sgam call.

    Attributes:
        code: the API's error code (``invalid``, ``not_found``, ...), or
            ``None`` when the server gave none (a transport failure).
        status: the HTTP status, or ``None`` when no answer came.
        field: the input at fault, as the request names it (``valid_from``,
            ``value``, ``authorization``, ``path``), or ``None``.
        pointer: for a value that broke a schema rule, the JSON pointer inside
            the value (``"/zip"``; ``""`` is the whole value), else ``None``.
        rule: the schema rule the value broke (``type``, ``enum``,
            ``pattern``, ``required``, ...), else ``None``.
        message: what the server said.
        retry_after: seconds the server asked to wait (``Retry-After``), or
            ``None``.
        request_id: the server's ``X-Request-Id`` of the request, for its log.
        operation: the route, as ``"POST /v1/facts"`` (the pattern, never the
            path, which holds subject ids).
    """

    default_code: str | None = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        field: str | None = None,
        pointer: str | None = None,
        rule: str | None = None,
        retry_after: float | None = None,
        request_id: str | None = None,
        operation: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else self.default_code
        self.status = status
        self.field = field
        self.pointer = pointer
        self.rule = rule
        self.retry_after = retry_after
        self.request_id = request_id
        self.operation = operation

    def __str__(self) -> str:
        msg = self.message
        if self.pointer is not None:
            msg = f"at {self.pointer or '(the whole value)'}: {msg}"
        if self.rule:
            msg = f"{msg} (rule {self.rule})"
        if self.field:
            msg = f"{self.field}: {msg}"
        head = self.code or "error"
        extra = []
        if self.status is not None:
            extra.append(str(self.status))
        if self.operation:
            extra.append(self.operation)
        if self.retry_after is not None:
            extra.append(f"retry after {self.retry_after:g}s")
        if self.request_id:
            extra.append(f"request {self.request_id}")
        tail = f" [{', '.join(extra)}]" if extra else ""
        return f"{head}: {msg}{tail}"

    def __repr__(self) -> str:
        parts = [f"code={self.code!r}", f"status={self.status!r}"]
        for name in ("field", "pointer", "rule", "retry_after", "request_id", "operation"):
            v = getattr(self, name)
            if v is not None:
                parts.append(f"{name}={v!r}")
        parts.append(f"message={self.message!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild,
            (type(self), self.message, self.code, self.status, self.field, self.pointer, self.rule,
             self.retry_after, self.request_id, self.operation),
        )


def _rebuild(cls: type[Error], message: str, code: Any, status: Any, field: Any, pointer: Any, rule: Any,
             retry_after: Any, request_id: Any, operation: Any) -> Error:
    return cls(message, code=code, status=status, field=field, pointer=pointer, rule=rule,
               retry_after=retry_after, request_id=request_id, operation=operation)


class Invalid(Error):
    """``invalid``: the input broke a rule (400; 413, 408, 405). ``field`` names
    the input; ``pointer`` and ``rule`` say where a value broke its schema."""

    default_code = "invalid"


class Unauthorized(Error):
    """``unauthenticated`` (401): the key is missing, unknown, malformed or revoked."""

    default_code = "unauthenticated"


class Forbidden(Error):
    """``forbidden`` (403): the key's role may not do this."""

    default_code = "forbidden"


class NotFound(Error):
    """``not_found`` (404): the tenant has no such thing (``field`` ``path``: no route)."""

    default_code = "not_found"


class Conflict(Error):
    """``conflict`` (409): the write contradicts what is stored; nothing was written."""

    default_code = "conflict"


class Unavailable(Error):
    """``unavailable`` (503): the store is busy or unreachable, the model server
    failed, or the tenant's token budget is spent; ``retry_after`` says how long
    to wait when the server said."""

    default_code = "unavailable"


class RateLimited(Unavailable):
    """``unavailable`` with status 429: the key's rate limit is spent;
    ``retry_after`` is the seconds until a request is admitted again."""


class ServerError(Error):
    """``internal`` (500): a fault of the server; its log has the details."""

    default_code = "internal"


class TransportError(Error):
    """The server could not be reached, or the connection broke or timed out
    before an answer came (``status`` is ``None``)."""


class UnexpectedResponse(Error):
    """An answer that is not the API's: not JSON, or not the shape documented."""


_BY_CODE: dict[str, type[Error]] = {
    "invalid": Invalid,
    "unauthenticated": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "conflict": Conflict,
    "unavailable": Unavailable,
    "internal": ServerError,
}

#: Each error code of the API and its class (docs/api.md; server/openapi.json's Error schema).
CODES: dict[str, type[Error]] = dict(_BY_CODE)


def error_for(status: int, code: str | None) -> type[Error]:
    """The class of an error answer with this status and code."""
    if status == 429:
        return RateLimited
    if code in _BY_CODE:
        return _BY_CODE[code]
    # A body without the API's code (a proxy in front, say): go by status.
    return {
        400: Invalid, 405: Invalid, 408: Invalid, 413: Invalid, 401: Unauthorized, 403: Forbidden,
        404: NotFound, 409: Conflict, 503: Unavailable,
    }.get(status, ServerError if status >= 500 else UnexpectedResponse)
