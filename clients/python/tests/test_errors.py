"""Each error code of the API as its exception class, with field, pointer and rule."""

from __future__ import annotations

import datetime as dt
import socket

import httpx
import pytest

import sgam
from sgam._core import Op

from .conftest import openapi_operations  # noqa: F401  (the document's codes are read below)

T1 = dt.datetime(2026, 6, 1, 9, tzinfo=dt.timezone.utc)


def test_the_error_codes_are_the_documents(openapi_doc: dict) -> None:
    codes = openapi_doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
    assert set(codes) == set(sgam.errors.CODES), "one exception class per error code of the API"
    for code, cls in sgam.errors.CODES.items():
        assert issubclass(cls, sgam.Error) and cls.default_code == code
    assert issubclass(sgam.RateLimited, sgam.Unavailable)
    assert issubclass(sgam.TransportError, sgam.Error) and issubclass(sgam.UnexpectedResponse, sgam.Error)


def test_invalid_names_the_field(alpha: sgam.Client, uid: str) -> None:
    with pytest.raises(sgam.Invalid) as e:
        alpha.facts.assert_(uid, "x", 1, source="e1", valid_from="yesterday")
    err = e.value
    assert (err.code, err.status, err.field, err.pointer, err.rule) == ("invalid", 400, "valid_from", None, None)
    assert err.operation == "POST /v1/facts" and err.request_id
    assert str(err).startswith("invalid: valid_from: ")


def test_invalid_names_pointer_and_rule(delta: sgam.Client, uid: str) -> None:
    with pytest.raises(sgam.Invalid) as e:
        delta.facts.assert_(uid, "address", {"zip": "12a"}, source="e1", valid_from=T1)
    assert (e.value.field, e.value.pointer, e.value.rule) == ("value", "/zip", "pattern")
    assert "at /zip:" in str(e.value) and "(rule pattern)" in str(e.value)
    with pytest.raises(sgam.Invalid) as e:
        delta.facts.assert_(uid, "plan", "gold", source="e1", valid_from=T1)
    assert (e.value.field, e.value.pointer, e.value.rule) == ("value", "", "enum")
    with pytest.raises(sgam.Invalid) as e:
        delta.facts.assert_(uid, "address", {}, source="e1", valid_from=T1)
    assert e.value.rule == "required"
    with pytest.raises(sgam.Invalid) as e:
        delta.facts.assert_(uid, "undeclared", 1, source="e1", valid_from=T1)
    assert e.value.field == "attribute"


def test_invalid_statuses_413_and_405(alpha: sgam.Client) -> None:
    with pytest.raises(sgam.Invalid) as e:
        alpha.episodes.add("x" * ((1 << 20) + 10), extract="none")
    assert (e.value.status, e.value.field) == (413, "body")
    with pytest.raises(sgam.Invalid) as e:
        alpha.call(Op("DELETE", "/v1/facts"))
    assert (e.value.status, e.value.field) == (405, "method")


def test_unauthorized(url: str) -> None:
    for key in ("sgam_nope_nope", None, "not a key"):
        with sgam.Client(url, key or "") as c:
            with pytest.raises(sgam.Unauthorized) as e:
                c.subjects.state("mira")
        assert (e.value.code, e.value.status, e.value.field) == ("unauthenticated", 401, "authorization")


def test_forbidden(alpha_read: sgam.Client, alpha_write: sgam.Client, uid: str) -> None:
    with pytest.raises(sgam.Forbidden) as e:
        alpha_read.facts.assert_(uid, "x", 1, source="e1", valid_from=T1)
    assert (e.value.code, e.value.status) == ("forbidden", 403)
    with pytest.raises(sgam.Forbidden):
        alpha_write.forget(subject=uid)
    with pytest.raises(sgam.Forbidden):
        alpha_write.schema.apply("attributes: {}")


def test_not_found(alpha: sgam.Client, uid: str) -> None:
    with pytest.raises(sgam.NotFound) as e:
        alpha.episodes.get(f"{uid}-none")
    assert (e.value.code, e.value.status) == ("not_found", 404)
    with pytest.raises(sgam.NotFound) as e:
        alpha.call(Op("GET", "/v1/nope"))
    assert e.value.field == "path"
    with pytest.raises(sgam.NotFound):
        alpha.pending.dismiss("p_nope")


def test_conflict(alpha: sgam.Client, uid: str) -> None:
    alpha.facts.assert_(uid, "plan", "free", source="e1", valid_from=T1)
    with pytest.raises(sgam.Conflict) as e:
        alpha.facts.assert_(uid, "plan", "pro", source="e2", valid_from=T1)
    assert (e.value.code, e.value.status) == ("conflict", 409)
    assert alpha.subjects.get(uid, "plan").fact.value == "free"  # type: ignore[union-attr]
    alpha.episodes.add("one text", episode_id=f"{uid}-c", extract="none")
    with pytest.raises(sgam.Conflict):
        alpha.episodes.add("another text", episode_id=f"{uid}-c", extract="none")


def test_unavailable_with_retry_after(gamma: sgam.Client, uid: str) -> None:
    # Tenant gamma's budget is 1 token a day: one extraction spends it, the
    # next "extract now" is refused 503 with the seconds until it resets.
    try:
        gamma.episodes.add(f"Spend{uid}'s budget is gone.", extract="now", episode_id=f"{uid}-1")
    except sgam.Unavailable:
        pass  # spent already, by an earlier run against this server
    with pytest.raises(sgam.Unavailable) as e:
        gamma.episodes.add(f"Spend{uid}'s budget is gone again.", extract="now", episode_id=f"{uid}-2")
    err = e.value
    assert type(err) is sgam.Unavailable and (err.code, err.status, err.field) == ("unavailable", 503, "extract")
    assert err.retry_after is not None and err.retry_after > 0
    # Captured and queued all the same.
    assert gamma.episodes.get(f"{uid}-2").content.endswith("again.")  # type: ignore[union-attr]


def test_server_error_and_unexpected_answers() -> None:
    # A real server answers 500 only for a fault of its own, which no test can
    # provoke on purpose: the mapping is checked on canned answers.
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/schema":
            return httpx.Response(500, json={"error": {"code": "internal", "message": "internal error"}},
                                  headers={"X-Request-Id": "r1"})
        if request.url.path == "/readyz":
            return httpx.Response(502, text="<html>bad gateway</html>")
        return httpx.Response(200, text="not json")

    with sgam.Client("http://sgam.test", "sgam_x", transport=httpx.MockTransport(handler)) as c:
        with pytest.raises(sgam.ServerError) as e:
            c.schema.get()
        assert (e.value.code, e.value.status, e.value.request_id) == ("internal", 500, "r1")
        with pytest.raises(sgam.ServerError) as e:
            c.ready()
        assert e.value.status == 502 and "bad gateway" in e.value.message
        with pytest.raises(sgam.UnexpectedResponse):
            c.health()


def test_transport_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with sgam.Client(f"http://127.0.0.1:{port}", "sgam_x", retry=sgam.Retry(max_retries=1, backoff=0.01)) as c:
        with pytest.raises(sgam.TransportError) as e:
            c.health()
    assert e.value.status is None and e.value.operation == "GET /healthz"
    assert e.value.__cause__ is None and e.value.__context__ is None


def test_errors_pickle() -> None:
    import pickle

    err = sgam.Invalid("bad", field="value", pointer="/a", rule="type", status=400)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is sgam.Invalid and (back.field, back.pointer, back.rule, back.status) == ("value", "/a", "type", 400)
