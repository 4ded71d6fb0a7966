"""Configuration, connection reuse, timeouts, context managers, the version."""

from __future__ import annotations

import asyncio
import re
import subprocess

import httpx
import pytest

import sgam

from .conftest import REPO


def test_defaults_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SGAM_URL", raising=False)
    monkeypatch.delenv("SGAM_API_KEY", raising=False)
    with sgam.Client() as c:
        assert c.base_url == "http://127.0.0.1:7420" and not c._key
    monkeypatch.setenv("SGAM_URL", "http://env.test:1/")
    monkeypatch.setenv("SGAM_API_KEY", "sgam_env")
    with sgam.Client() as c:
        assert c.base_url == "http://env.test:1" and c._key.get() == "sgam_env"
    with sgam.Client("http://arg.test", "sgam_arg") as c:
        assert c.base_url == "http://arg.test" and c._key.get() == "sgam_arg"


def test_one_connection_is_reused(env: dict[str, str]) -> None:
    opened = []

    class Counting(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            return super().handle_request(request)

    transport = Counting()
    pool = transport._pool
    with sgam.Client(env["SGAM_URL"], env["SGAM_ALPHA_READ_KEY"], transport=transport) as c:
        for _ in range(5):
            c.subjects.state("reuse")
            opened.append(len(pool.connections))
    assert opened == [1] * 5, "every call went over the one kept-alive connection"
    assert len(pool.connections) == 0, "closing the client closed its connections"


def test_a_given_http_client_is_not_closed(env: dict[str, str]) -> None:
    http = httpx.Client()
    with sgam.Client(env["SGAM_URL"], env["SGAM_ALPHA_READ_KEY"], http_client=http) as c:
        c.health()
    assert not http.is_closed
    http.close()


def test_timeout() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with sgam.Client("http://sgam.test", "k", timeout=0.5, transport=httpx.MockTransport(slow),
                     retry=sgam.NO_RETRY) as c:
        assert c._timeout.read == 0.5 and c._timeout.connect == 0.5
        with pytest.raises(sgam.TransportError) as e:
            c.health()
    assert "ReadTimeout" in str(e.value)
    assert sgam.Client("http://x", timeout=60)._timeout.connect == 10.0


def test_async_context_manager(env: dict[str, str]) -> None:
    async def go() -> bool:
        async with sgam.AsyncClient(env["SGAM_URL"], env["SGAM_ALPHA_READ_KEY"]) as c:
            ok = (await c.health()).ok
        assert c._http.is_closed
        return ok

    assert asyncio.run(go())


def test_naive_datetimes_are_refused() -> None:
    import datetime as dt

    with sgam.Client("http://sgam.test", "k") as c, pytest.raises(ValueError):
        c.facts.assert_("s", "a", 1, source="e", valid_from=dt.datetime(2026, 1, 1))


def test_version_follows_the_server() -> None:
    """The SDK of a commit tagged vX.Y.Z is X.Y.Z; an untagged commit's is 0.0.0.dev0."""
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.dev0)?", sgam.__version__)
    try:
        tag = subprocess.run(["git", "describe", "--tags", "--exact-match", "--match", "v[0-9]*"], cwd=REPO,
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        pytest.skip("no git to read the commit's tag with")
    if tag.returncode == 0 and re.fullmatch(r"v\d+\.\d+\.\d+", tag.stdout.strip()):
        assert sgam.__version__ == tag.stdout.strip()[1:]
    else:
        assert sgam.__version__ == "0.0.0.dev0"
