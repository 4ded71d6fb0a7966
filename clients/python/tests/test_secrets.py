"""The API key never appears: not in a repr, an exception, or a log line."""

from __future__ import annotations

import asyncio
import logging
import pathlib
import pickle
import traceback

import httpx
import pytest

import sgam
from sgam.capture import TurnMemory
from sgam.tools import MemoryTools

SECRET = "sgam_abcdefghijkl_" + "s3cr3t" * 6


def texts_of(err: BaseException) -> list[str]:
    return [str(err), repr(err), "".join(traceback.format_exception(err)), repr(vars(err)), repr(err.args),
            pickle.dumps(err).decode("latin-1")]


def test_reprs_hide_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGAM_API_KEY", SECRET)
    monkeypatch.setenv("SGAM_URL", "http://sgam.test:1234/")
    c = sgam.Client()
    a = sgam.AsyncClient()
    assert c.base_url == "http://sgam.test:1234" and c._key.get() == SECRET
    shown = [repr(c), str(c), repr(a), repr(c.facts), repr(c._key), str(c._key), f"{c._key}", repr(vars(c)),
             repr(MemoryTools(c)), repr(TurnMemory(c, session="s"))]
    try:
        from sgam.langgraph import SgamStore

        shown.append(repr(SgamStore(c)))
    except ImportError:  # pragma: no cover
        pass
    for s in shown:
        assert SECRET not in s, s
    assert "api_key=<set>" in repr(c)
    with pytest.raises(TypeError):
        pickle.dumps(c._key)
    c.close()
    asyncio.run(a.aclose())


def test_the_key_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"facts": []})

    with sgam.Client("http://sgam.test", SECRET, transport=httpx.MockTransport(handler)) as c:
        c.subjects.state("s")
    assert seen == [f"Bearer {SECRET}"]


def test_errors_and_logs_hold_no_key(env: dict[str, str], keys: dict[str, str], uid: str,
                                     caplog: pytest.LogCaptureFixture) -> None:
    errs: list[BaseException] = []
    with caplog.at_level(logging.DEBUG):
        # Every kind of error the real server gives, with a real key, and a wrong one.
        with sgam.Client(env["SGAM_URL"], env["SGAM_ALPHA_READ_KEY"]) as c:
            for call in (lambda: c.facts.assert_(uid, "x", 1, source="e"),
                         lambda: c.episodes.get(f"{uid}-none"),
                         lambda: c.facts.assert_(uid, "x", 1, source="e", valid_from="nope"),
                         lambda: c.forget(subject=uid)):
                with pytest.raises(sgam.Error) as e:
                    call()
                errs.append(e.value)
            c.subjects.state(uid)
        with sgam.Client(env["SGAM_URL"], SECRET) as c:
            with pytest.raises(sgam.Unauthorized) as e:
                c.subjects.state(uid)
            errs.append(e.value)
            tool_answer = MemoryTools(c).recall("anything?")
        # Retries and a transport failure, logged.
        answers = [httpx.Response(503, json={"error": {"code": "unavailable", "message": "busy"}},
                                  headers={"Retry-After": "0"}), httpx.ConnectError("refused")]

        def handler(request: httpx.Request) -> httpx.Response:
            a = answers.pop(0)
            if isinstance(a, Exception):
                raise a
            return a

        with sgam.Client("http://sgam.test", SECRET, transport=httpx.MockTransport(handler),
                         retry=sgam.Retry(max_retries=1)) as c:
            with pytest.raises(sgam.TransportError) as e:
                c.subjects.state(uid)
            errs.append(e.value)
    assert any(r.name == "sgam" for r in caplog.records), "the SDK logged its retries"
    secrets = [SECRET, *keys.values()]
    texts = [t for err in errs for t in texts_of(err)] + [tool_answer] + \
        [r.getMessage() for r in caplog.records] + [repr(r.args) for r in caplog.records]
    for text in texts:
        for s in secrets:
            assert s not in text
    assert "unauthenticated" in tool_answer


def test_the_servers_logs_hold_no_key(env: dict[str, str], keys: dict[str, str]) -> None:
    for path in env.get("SGAM_SERVE_LOGS", "").split(":"):
        if path:
            text = pathlib.Path(path).read_text()
            assert text, path
            for k in keys.values():
                assert k not in text
