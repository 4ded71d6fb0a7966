"""Retries: 429 and 503 retried with backoff, honouring Retry-After, bounded,
only for requests safe to repeat. The 429s come from the real server's
--rate-limit (the twin serve.sh starts at 1 request/s, bursts of 2)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import httpx
import pytest

import sgam


@pytest.fixture
def limited(env: dict[str, str]) -> Iterator[tuple[str, str]]:
    yield env["SGAM_LIMITED_URL"], env["SGAM_LIMITED_KEY"]


def drain(url: str, key: str) -> None:
    """Spend the key's tokens: until the server answers 429."""
    with sgam.Client(url, key, retry=sgam.NO_RETRY) as c:
        for _ in range(20):
            try:
                c.subjects.state("drain")
            except sgam.RateLimited:
                return
    raise AssertionError("the rate-limited server never answered 429")


class Sleeps(list):
    """Stands in for time.sleep: notes each wait, then waits it (and maybe more)."""

    def __init__(self, then: object = None) -> None:
        super().__init__()
        self.then = then

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
        time.sleep(seconds)
        if callable(self.then):
            self.then()


def test_429_is_retried_after_retry_after(limited: tuple[str, str], uid: str, caplog: pytest.LogCaptureFixture) -> None:
    url, key = limited
    with sgam.Client(url, key, retry=sgam.Retry(max_retries=3)) as c:
        c._sleep = sleeps = Sleeps()
        drain(url, key)
        with caplog.at_level(logging.INFO, logger="sgam"):
            assert c.subjects.state(uid) == []
    assert sleeps and sleeps[0] >= 1.0, "waited the Retry-After (1 s) the server sent"
    assert any("GET /v1/subjects/{subject} answered 429; retrying" in r.getMessage() for r in caplog.records)


def test_429_retried_then_surfaced_with_retry_after(limited: tuple[str, str], uid: str) -> None:
    url, key = limited
    attempts: list[httpx.Request] = []
    http = httpx.Client(event_hooks={"request": [attempts.append]})
    with sgam.Client(url, key, retry=sgam.Retry(max_retries=2), http_client=http) as c:
        # Each wait ends with the key's tokens spent again, so every retry meets a 429.
        c._sleep = sleeps = Sleeps(then=lambda: drain(url, key))
        drain(url, key)
        with pytest.raises(sgam.RateLimited) as e:
            c.subjects.history(uid, "x")
    http.close()
    err = e.value
    assert (err.code, err.status, err.field) == ("unavailable", 429, "authorization")
    assert err.retry_after == 1.0
    assert len(attempts) == 3 and len(sleeps) == 2, "two retries, then the error"
    assert all(s >= 1.0 for s in sleeps)


def test_writes_not_safe_to_repeat_are_not_retried(limited: tuple[str, str], uid: str) -> None:
    url, key = limited
    with sgam.Client(url, key, retry=sgam.Retry(max_retries=3)) as c:
        c._sleep = sleeps = Sleeps()
        drain(url, key)
        with pytest.raises(sgam.RateLimited):
            c.episodes.add("an episode without an id or an idempotency key", extract="none")
        assert sleeps == []
        drain(url, key)
        with pytest.raises(sgam.RateLimited):  # a confirm is never retried
            c.pending.confirm(f"p_{uid}", f"{uid}-e")
        drain(url, key)
        with pytest.raises(sgam.RateLimited):  # nor is a dismiss
            c.pending.dismiss(f"p_{uid}")
    assert sleeps == []


def test_episode_with_an_idempotency_key_is_retried(limited: tuple[str, str], uid: str) -> None:
    url, key = limited
    with sgam.Client(url, key, retry=sgam.Retry(max_retries=3)) as c:
        c._sleep = sleeps = Sleeps()
        drain(url, key)
        ep = c.episodes.add("retried safely", idempotency_key=f"{uid}-k", extract="none")
        assert ep.idempotency_key == f"{uid}-k" and sleeps
        sleeps.clear()
        drain(url, key)
        again = c.facts.assert_(uid, "note", "x", source=ep.episode_id or "", valid_from="2026-06-01T00:00:00Z")
        assert again.fact is not None and sleeps


def test_a_retry_after_beyond_the_bound_is_not_waited(limited: tuple[str, str], uid: str) -> None:
    url, key = limited
    with sgam.Client(url, key, retry=sgam.Retry(max_retries=3, max_retry_after=0.5)) as c:
        c._sleep = sleeps = Sleeps()
        drain(url, key)
        with pytest.raises(sgam.RateLimited) as e:
            c.subjects.state(uid)
    assert sleeps == [] and e.value.retry_after == 1.0


def canned(*answers: httpx.Response | Exception) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        a = queue.pop(0)
        if isinstance(a, Exception):
            raise a
        return a

    return httpx.MockTransport(handler), seen


UNAVAILABLE = {"error": {"code": "unavailable", "message": "the store is busy"}}


def test_503_backoff_and_http_date() -> None:
    date = "Wed, 21 Oct 2015 07:28:00 GMT"  # in the past: wait 0
    transport, seen = canned(httpx.Response(503, json=UNAVAILABLE),
                             httpx.Response(503, json=UNAVAILABLE, headers={"Retry-After": date}),
                             httpx.Response(200, json={"ok": True}))
    with sgam.Client("http://sgam.test", "k", transport=transport, retry=sgam.Retry(backoff=0.2)) as c:
        c._sleep = sleeps = Sleeps()
        assert c.ready().ok
    assert len(seen) == 3 and 0.1 <= sleeps[0] <= 0.2 and sleeps[1] == 0.0


def test_503_exhausts_the_retries() -> None:
    transport, seen = canned(*[httpx.Response(503, json=UNAVAILABLE, headers={"Retry-After": "0"})] * 4)
    with sgam.Client("http://sgam.test", "k", transport=transport, retry=sgam.Retry(max_retries=3)) as c:
        c._sleep = Sleeps()
        with pytest.raises(sgam.Unavailable) as e:
            c.subjects.state("s")
    assert len(seen) == 4 and e.value.status == 503 and e.value.retry_after == 0.0


def test_transport_errors_are_retried_only_when_safe() -> None:
    transport, seen = canned(httpx.ConnectError("refused"), httpx.Response(200, json={"facts": []}))
    with sgam.Client("http://sgam.test", "k", transport=transport) as c:
        c._sleep = Sleeps()
        assert c.subjects.state("s") == []
    assert len(seen) == 2
    transport, seen = canned(httpx.ReadTimeout("slow"), httpx.Response(200, json={}))
    with sgam.Client("http://sgam.test", "k", transport=transport) as c:
        c._sleep = Sleeps()
        with pytest.raises(sgam.TransportError):
            c.forget(subject="s")
    assert len(seen) == 1


async def test_async_client_retries_too() -> None:
    answers = [httpx.Response(429, json={"error": {"code": "unavailable", "message": "slow down"}},
                              headers={"Retry-After": "0"}), httpx.Response(200, json={"ok": True})]

    async def handler(request: httpx.Request) -> httpx.Response:
        return answers.pop(0)

    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    async with sgam.AsyncClient("http://sgam.test", "k", transport=httpx.MockTransport(handler)) as c:
        c._sleep = sleep
        assert (await c.health()).ok
    assert waits == [0.0]
