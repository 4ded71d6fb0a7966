"""``sgam.Client`` and ``sgam.AsyncClient``: one method per operation of the
sgam HTTP API, grouped as the API is.

======================  ===================================================
group                   methods
======================  ===================================================
(the client itself)     ``health``, ``ready``, ``openapi``, ``metrics``,
                        ``recall``, ``forget``, ``receipts``, ``replay``,
                        ``mcp``
``episodes``            ``add``, ``list``, ``get``
``extractions``         ``list`` (an episode's extraction records)
``facts``               ``assert_``, ``retract``, ``trace``
``subjects``            ``state``, ``get``, ``history``, ``traverse``
``sets``                ``add``, ``remove``
``pending``             ``list``, ``confirm``, ``dismiss``
``schema``              ``get``, ``apply``
======================  ===================================================

The two clients have the same methods with the same arguments; the async
client's are coroutines.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx

from . import _ops as ops
from . import errors
from . import models as m
from ._core import Base, Op, Retry, log
from ._ops import Extract, Instant

__all__ = ["Client", "AsyncClient"]

_UNSET: Any = ops._UNSET


class Client(Base):
    """A synchronous client of one sgam server, acting as one API key.

    Args:
        base_url: the server, default ``$SGAM_URL`` or ``http://127.0.0.1:7420``.
        api_key: the key (``sgam_...``), default ``$SGAM_API_KEY``. It decides
            the tenant and the role of every call; it is sent as a bearer token
            and never shown (not in ``repr``, errors or logs).
        timeout: seconds a request may take (connect: at most 10 s), or an
            :class:`httpx.Timeout`; default 60 s (a server answers within its
            own 30 s request timeout).
        retry: when safe requests are tried again (:class:`sgam.Retry`);
            ``sgam.NO_RETRY`` turns retries off.
        http_client: an :class:`httpx.Client` to send with (its connection
            pool, proxies, TLS settings); it is not closed by :meth:`close`.
        transport: an httpx transport for the client's own connection pool
            (tests use :class:`httpx.MockTransport`).

    The client keeps its connections open between calls: use it as a context
    manager (``with sgam.Client() as c:``) or call :meth:`close`.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout | None = 60.0,
        retry: Retry | None = None,
        http_client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        user_agent: str | None = None,
    ) -> None:
        self._configure(base_url, api_key, timeout, retry, user_agent)
        self._own_http = http_client is None
        self._http = http_client or httpx.Client(timeout=self._timeout, transport=transport, follow_redirects=False)
        self._sleep = time.sleep
        self.episodes = Episodes(self)
        self.extractions = Extractions(self)
        self.facts = Facts(self)
        self.subjects = Subjects(self)
        self.sets = Sets(self)
        self.pending = Pending(self)
        self.schema = Schema(self)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the client's connections (not those of an ``http_client`` given to it)."""
        if self._own_http:
            self._http.close()

    def call(self, op: Op) -> Any:
        """Send one operation, retrying it as :class:`sgam.Retry` says."""
        retries = 0
        while True:
            method, url, headers, params, body = self._request_parts(op)
            failure: errors.Error | None = None
            start = time.monotonic()
            try:
                resp = self._http.request(method, url, headers=headers, params=params, content=body,
                                          timeout=self._timeout)
            except httpx.TransportError as e:
                failure = self._transport_error(op, e)
            else:
                log.debug("sgam: %s -> %d in %.0f ms", op.name, resp.status_code, (time.monotonic() - start) * 1000)
                if resp.status_code < 300:
                    return self._result(op, resp)
                failure = self._error(op, resp)
            wait = self._retry_wait(op, retries, failure)
            if wait is None:
                raise failure
            self._log_retry(op, retries, wait, failure)
            self._sleep(wait)
            retries += 1

    # Health and the document.

    def health(self) -> m.Health:
        """``GET /healthz``: the server is up."""
        return self.call(ops.health())

    def ready(self) -> m.Ok:
        """``GET /readyz``: the server is up and its store answers (else :class:`sgam.Unavailable`)."""
        return self.call(ops.ready())

    def openapi(self) -> dict[str, Any]:
        """``GET /openapi.json``: the server's OpenAPI document."""
        return self.call(ops.openapi())

    def metrics(self) -> str:
        """``GET /metrics``: the server's Prometheus metrics, as text."""
        return self.call(ops.metrics())

    # Recall.

    def recall(
        self,
        question: str | None = None,
        *,
        subjects: Sequence[str] | None = None,
        attributes: Sequence[str] | None = None,
        as_of: Instant | None = None,
        known_at: Instant | None = None,
        budget: int | None = None,
        evidence: str | None = None,
        evidence_limit: int | None = None,
        hops: int | None = None,
        session: str | None = None,
    ) -> m.RecallContext:
        """``POST /v1/recall``: what memory holds to answer ``question``.

        The answer's ``.rendered`` is the prompt-ready block (facts at the
        instants asked, with sources and quotes, then evidence), within
        ``budget`` tokens (default 800). ``as_of`` and ``known_at`` win over the
        instants the question names; ``subjects`` over the subjects it names.
        ``evidence`` is ``"auto"`` (the default: at most ``evidence_limit``
        episodes, those near the best match, and when the facts answer only
        what their quotes leave out), ``"always"`` or ``"none"``.
        """
        return self.call(ops.recall(question, subjects=subjects, attributes=attributes, as_of=as_of,
                                    known_at=known_at, budget=budget, evidence=evidence,
                                    evidence_limit=evidence_limit, hops=hops, session=session))

    # Forget and receipts.

    def forget(self, *, subject: str | None = None, episode_id: str | None = None, all: bool = False) -> m.Receipt:
        """``POST /v1/forget`` (admin): delete a subject, an episode or the whole
        tenant for real, and return the audit receipt. Never retried."""
        return self.call(ops.forget(subject=subject, episode_id=episode_id, all=all))

    def receipts(self) -> list[m.Receipt]:
        """``GET /v1/receipts`` (admin): the tenant's forget and expiry receipts, oldest first."""
        return self.call(ops.receipts())

    # Replay and MCP.

    def replay(self, script: str | Iterable[Mapping[str, Any]]) -> m.ReplayResult:
        """``POST /v1/replay`` (admin): run a JSONL replay script (a string, or
        one mapping per line) within the key's tenant. Never retried."""
        return self.call(ops.replay(script))

    def mcp(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /mcp``: send one MCP JSON-RPC message (stateless streamable
        HTTP) and return the JSON-RPC answer. Never retried."""
        return self.call(ops.mcp(message))


class _Group:
    def __init__(self, client: Client) -> None:
        self._c = client

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._c!r}>"


class Episodes(_Group):
    def add(
        self,
        content: str,
        *,
        episode_id: str | None = None,
        session: str | None = None,
        kind: str | None = None,
        occurred_at: Instant | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        retention: str | None = None,
        subjects: Sequence[str] | None = None,
        extract: Extract | None = None,
    ) -> m.EpisodeResponse:
        """``POST /v1/episodes``: capture an episode (a message, a tool result, an
        event) and queue (``"background"``) or run (``"now"``) its extraction,
        or only capture it (``"none"``). Retried only with an ``episode_id`` or
        an ``idempotency_key``, which make a repeat the same episode."""
        return self._c.call(ops.add_episode(content, episode_id=episode_id, session=session, kind=kind,
                                            occurred_at=occurred_at, metadata=metadata,
                                            idempotency_key=idempotency_key, retention=retention,
                                            subjects=subjects, extract=extract))

    def list(self, *, session: str | None = None, limit: int | None = None) -> list[m.Episode]:
        """``GET /v1/episodes``: episodes, oldest first (``limit`` 1 to 10000, default 100)."""
        return self._c.call(ops.list_episodes(session=session, limit=limit))

    def get(self, episode_id: str) -> m.Episode:
        """``GET /v1/episodes/{id}``: one episode (:class:`sgam.NotFound` when the tenant has none)."""
        return self._c.call(ops.get_episode(episode_id))


class Extractions(_Group):
    def list(self, episode_id: str) -> list[m.Extraction]:
        """``GET /v1/episodes/{id}/extractions``: the episode's extraction records, oldest first."""
        return self._c.call(ops.list_extractions(episode_id))


class Facts(_Group):
    def assert_(self, subject: str, attribute: str, value: Any, *, source: str,
                valid_from: Instant | None = None) -> m.WriteResult:
        """``POST /v1/facts``: ``subject``'s ``attribute`` is ``value`` (any JSON
        value) from ``valid_from`` (default: now, read once, so that a retry is
        the same assertion) on, said by the episode ``source``."""
        return self._c.call(ops.assert_fact(subject, attribute, value, source=source, valid_from=valid_from))

    def retract(self, subject: str, attribute: str, *, source: str, at: Instant | None = None,
                value: Any = _UNSET) -> m.WriteResult:
        """``POST /v1/facts/retract``: no value from ``at`` (default now) on; for a
        set, ``value`` names the member to remove. History keeps the old value."""
        return self._c.call(ops.retract_fact(subject, attribute, source=source, at=at, value=value))

    def trace(self, fact_id: int) -> m.Trace:
        """``GET /v1/facts/{id}/trace``: the supersedes chain and the source episodes."""
        return self._c.call(ops.trace(fact_id))


class Subjects(_Group):
    def state(self, subject: str, *, as_of: Instant | None = None, known_at: Instant | None = None) -> list[m.Fact]:
        """``GET /v1/subjects/{subject}``: every attribute with a value at ``as_of``
        (valid time, default now) as believed at ``known_at`` (default now)."""
        return self._c.call(ops.state(subject, as_of=as_of, known_at=known_at))

    def get(self, subject: str, attribute: str, *, as_of: Instant | None = None,
            known_at: Instant | None = None) -> m.AttributeValue:
        """``GET /v1/subjects/{subject}/attributes/{attribute}``: ``.fact`` (None:
        no value), or ``.facts`` for a set's members."""
        return self._c.call(ops.get_value(subject, attribute, as_of=as_of, known_at=known_at))

    def history(self, subject: str, attribute: str) -> list[m.Fact]:
        """``GET .../attributes/{attribute}/history``: every row, in write order."""
        return self._c.call(ops.history(subject, attribute))

    def traverse(self, subject: str, path: Sequence[str] | str | None = None, *, as_of: Instant | None = None,
                 known_at: Instant | None = None) -> list[m.Hop]:
        """``GET /v1/subjects/{subject}/traverse``: follow ``ref`` attributes hop by hop."""
        return self._c.call(ops.traverse(subject, path, as_of=as_of, known_at=known_at))


class Sets(_Group):
    def add(self, subject: str, attribute: str, member: Any, *, source: str,
            valid_from: Instant | None = None) -> m.WriteResult:
        """``POST /v1/sets/add``: add ``member`` to a set attribute from ``valid_from`` (default now) on."""
        return self._c.call(ops.add_member(subject, attribute, member, source=source, valid_from=valid_from))

    def remove(self, subject: str, attribute: str, member: Any, *, source: str,
               at: Instant | None = None) -> m.WriteResult:
        """``POST /v1/sets/remove``: remove ``member`` from ``at`` (default now) on."""
        return self._c.call(ops.remove_member(subject, attribute, member, source=source, at=at))


class Pending(_Group):
    def list(self, *, subject: str | None = None) -> list[m.Candidate]:
        """``GET /v1/pending``: candidates held back from becoming facts, oldest first."""
        return self._c.call(ops.list_pending(subject=subject))

    def confirm(self, pending_id: str, episode_id: str) -> m.WriteResult:
        """``POST /v1/pending/{id}/confirm``: make the candidate a fact, confirmed by ``episode_id``."""
        return self._c.call(ops.confirm(pending_id, episode_id))

    def dismiss(self, pending_id: str) -> m.Ok:
        """``POST /v1/pending/{id}/dismiss``: delete the candidate."""
        return self._c.call(ops.dismiss(pending_id))


class Schema(_Group):
    def get(self) -> m.SchemaVersion:
        """``GET /v1/schema``: the schema in force for the key's tenant."""
        return self._c.call(ops.get_schema())

    def apply(self, schema: str | Mapping[str, Any], *, dry_run: bool = False) -> m.SchemaVersion:
        """``POST /v1/schema`` (admin): apply a schema file (YAML text, or a
        mapping sent as JSON) as the tenant's next version; ``dry_run``: only the diff."""
        return self._c.call(ops.apply_schema(schema, dry_run=dry_run))


# The asynchronous client: the same methods, as coroutines.


class AsyncClient(Base):
    """The asynchronous twin of :class:`Client`: the same arguments and
    methods, each a coroutine. Use ``async with sgam.AsyncClient() as c:`` or
    ``await c.aclose()``."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout | None = 60.0,
        retry: Retry | None = None,
        http_client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        user_agent: str | None = None,
    ) -> None:
        self._configure(base_url, api_key, timeout, retry, user_agent)
        self._own_http = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=self._timeout, transport=transport,
                                                      follow_redirects=False)
        self._sleep = asyncio.sleep
        self.episodes = AsyncEpisodes(self)
        self.extractions = AsyncExtractions(self)
        self.facts = AsyncFacts(self)
        self.subjects = AsyncSubjects(self)
        self.sets = AsyncSets(self)
        self.pending = AsyncPending(self)
        self.schema = AsyncSchema(self)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client's connections (not those of an ``http_client`` given to it)."""
        if self._own_http:
            await self._http.aclose()

    async def call(self, op: Op) -> Any:
        """Send one operation, retrying it as :class:`sgam.Retry` says."""
        retries = 0
        while True:
            method, url, headers, params, body = self._request_parts(op)
            failure: errors.Error | None = None
            start = time.monotonic()
            try:
                resp = await self._http.request(method, url, headers=headers, params=params, content=body,
                                                timeout=self._timeout)
            except httpx.TransportError as e:
                failure = self._transport_error(op, e)
            else:
                log.debug("sgam: %s -> %d in %.0f ms", op.name, resp.status_code, (time.monotonic() - start) * 1000)
                if resp.status_code < 300:
                    return self._result(op, resp)
                failure = self._error(op, resp)
            wait = self._retry_wait(op, retries, failure)
            if wait is None:
                raise failure
            self._log_retry(op, retries, wait, failure)
            await self._sleep(wait)
            retries += 1

    async def health(self) -> m.Health:
        """``GET /healthz``: the server is up."""
        return await self.call(ops.health())

    async def ready(self) -> m.Ok:
        """``GET /readyz``: the server is up and its store answers."""
        return await self.call(ops.ready())

    async def openapi(self) -> dict[str, Any]:
        """``GET /openapi.json``: the server's OpenAPI document."""
        return await self.call(ops.openapi())

    async def metrics(self) -> str:
        """``GET /metrics``: the server's Prometheus metrics, as text."""
        return await self.call(ops.metrics())

    async def recall(
        self,
        question: str | None = None,
        *,
        subjects: Sequence[str] | None = None,
        attributes: Sequence[str] | None = None,
        as_of: Instant | None = None,
        known_at: Instant | None = None,
        budget: int | None = None,
        evidence: str | None = None,
        evidence_limit: int | None = None,
        hops: int | None = None,
        session: str | None = None,
    ) -> m.RecallContext:
        """``POST /v1/recall``: what memory holds to answer ``question`` (see :meth:`Client.recall`)."""
        return await self.call(ops.recall(question, subjects=subjects, attributes=attributes, as_of=as_of,
                                          known_at=known_at, budget=budget, evidence=evidence,
                                          evidence_limit=evidence_limit, hops=hops, session=session))

    async def forget(self, *, subject: str | None = None, episode_id: str | None = None,
                     all: bool = False) -> m.Receipt:
        """``POST /v1/forget`` (admin): delete for real; the audit receipt."""
        return await self.call(ops.forget(subject=subject, episode_id=episode_id, all=all))

    async def receipts(self) -> list[m.Receipt]:
        """``GET /v1/receipts`` (admin): the tenant's receipts."""
        return await self.call(ops.receipts())

    async def replay(self, script: str | Iterable[Mapping[str, Any]]) -> m.ReplayResult:
        """``POST /v1/replay`` (admin): run a JSONL replay script."""
        return await self.call(ops.replay(script))

    async def mcp(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /mcp``: one MCP JSON-RPC message, its answer."""
        return await self.call(ops.mcp(message))


class _AsyncGroup:
    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._c!r}>"


class AsyncEpisodes(_AsyncGroup):
    async def add(
        self,
        content: str,
        *,
        episode_id: str | None = None,
        session: str | None = None,
        kind: str | None = None,
        occurred_at: Instant | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        retention: str | None = None,
        subjects: Sequence[str] | None = None,
        extract: Extract | None = None,
    ) -> m.EpisodeResponse:
        """``POST /v1/episodes`` (see :meth:`Episodes.add`)."""
        return await self._c.call(ops.add_episode(content, episode_id=episode_id, session=session, kind=kind,
                                                  occurred_at=occurred_at, metadata=metadata,
                                                  idempotency_key=idempotency_key, retention=retention,
                                                  subjects=subjects, extract=extract))

    async def list(self, *, session: str | None = None, limit: int | None = None) -> list[m.Episode]:
        """``GET /v1/episodes``."""
        return await self._c.call(ops.list_episodes(session=session, limit=limit))

    async def get(self, episode_id: str) -> m.Episode:
        """``GET /v1/episodes/{id}``."""
        return await self._c.call(ops.get_episode(episode_id))


class AsyncExtractions(_AsyncGroup):
    async def list(self, episode_id: str) -> list[m.Extraction]:
        """``GET /v1/episodes/{id}/extractions``."""
        return await self._c.call(ops.list_extractions(episode_id))


class AsyncFacts(_AsyncGroup):
    async def assert_(self, subject: str, attribute: str, value: Any, *, source: str,
                      valid_from: Instant | None = None) -> m.WriteResult:
        """``POST /v1/facts`` (see :meth:`Facts.assert_`)."""
        return await self._c.call(ops.assert_fact(subject, attribute, value, source=source, valid_from=valid_from))

    async def retract(self, subject: str, attribute: str, *, source: str, at: Instant | None = None,
                      value: Any = _UNSET) -> m.WriteResult:
        """``POST /v1/facts/retract``."""
        return await self._c.call(ops.retract_fact(subject, attribute, source=source, at=at, value=value))

    async def trace(self, fact_id: int) -> m.Trace:
        """``GET /v1/facts/{id}/trace``."""
        return await self._c.call(ops.trace(fact_id))


class AsyncSubjects(_AsyncGroup):
    async def state(self, subject: str, *, as_of: Instant | None = None,
                    known_at: Instant | None = None) -> list[m.Fact]:
        """``GET /v1/subjects/{subject}``."""
        return await self._c.call(ops.state(subject, as_of=as_of, known_at=known_at))

    async def get(self, subject: str, attribute: str, *, as_of: Instant | None = None,
                  known_at: Instant | None = None) -> m.AttributeValue:
        """``GET /v1/subjects/{subject}/attributes/{attribute}``."""
        return await self._c.call(ops.get_value(subject, attribute, as_of=as_of, known_at=known_at))

    async def history(self, subject: str, attribute: str) -> list[m.Fact]:
        """``GET .../attributes/{attribute}/history``."""
        return await self._c.call(ops.history(subject, attribute))

    async def traverse(self, subject: str, path: Sequence[str] | str | None = None, *,
                       as_of: Instant | None = None, known_at: Instant | None = None) -> list[m.Hop]:
        """``GET /v1/subjects/{subject}/traverse``."""
        return await self._c.call(ops.traverse(subject, path, as_of=as_of, known_at=known_at))


class AsyncSets(_AsyncGroup):
    async def add(self, subject: str, attribute: str, member: Any, *, source: str,
                  valid_from: Instant | None = None) -> m.WriteResult:
        """``POST /v1/sets/add``."""
        return await self._c.call(ops.add_member(subject, attribute, member, source=source, valid_from=valid_from))

    async def remove(self, subject: str, attribute: str, member: Any, *, source: str,
                     at: Instant | None = None) -> m.WriteResult:
        """``POST /v1/sets/remove``."""
        return await self._c.call(ops.remove_member(subject, attribute, member, source=source, at=at))


class AsyncPending(_AsyncGroup):
    async def list(self, *, subject: str | None = None) -> list[m.Candidate]:
        """``GET /v1/pending``."""
        return await self._c.call(ops.list_pending(subject=subject))

    async def confirm(self, pending_id: str, episode_id: str) -> m.WriteResult:
        """``POST /v1/pending/{id}/confirm``."""
        return await self._c.call(ops.confirm(pending_id, episode_id))

    async def dismiss(self, pending_id: str) -> m.Ok:
        """``POST /v1/pending/{id}/dismiss``."""
        return await self._c.call(ops.dismiss(pending_id))


class AsyncSchema(_AsyncGroup):
    async def get(self) -> m.SchemaVersion:
        """``GET /v1/schema``."""
        return await self._c.call(ops.get_schema())

    async def apply(self, schema: str | Mapping[str, Any], *, dry_run: bool = False) -> m.SchemaVersion:
        """``POST /v1/schema`` (admin)."""
        return await self._c.call(ops.apply_schema(schema, dry_run=dry_run))
