"""Every operation of the API as an :class:`Op` builder, written once for both
clients. ``OPERATIONS`` maps each route of ``server/openapi.json`` to the
client method that calls it; a test fails when the document has a route
that is not there."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from . import models as m
from ._core import Op, instant
from ._json import dumps

Instant = _dt.datetime | str
Extract = Literal["background", "now", "none"]

#: Each operation of the API ("METHOD /route", as in server/openapi.json) and
#: the method of :class:`sgam.Client` (and :class:`sgam.AsyncClient`) that calls it.
OPERATIONS: dict[str, str] = {
    "GET /healthz": "health",
    "GET /readyz": "ready",
    "GET /openapi.json": "openapi",
    "GET /metrics": "metrics",
    "POST /v1/episodes": "episodes.add",
    "GET /v1/episodes": "episodes.list",
    "GET /v1/episodes/{id}": "episodes.get",
    "GET /v1/episodes/{id}/extractions": "extractions.list",
    "POST /v1/facts": "facts.assert_",
    "POST /v1/facts/retract": "facts.retract",
    "GET /v1/facts/{id}/trace": "facts.trace",
    "POST /v1/recall": "recall",
    "GET /v1/subjects/{subject}": "subjects.state",
    "GET /v1/subjects/{subject}/attributes/{attribute}": "subjects.get",
    "GET /v1/subjects/{subject}/attributes/{attribute}/history": "subjects.history",
    "GET /v1/subjects/{subject}/traverse": "subjects.traverse",
    "POST /v1/sets/add": "sets.add",
    "POST /v1/sets/remove": "sets.remove",
    "GET /v1/pending": "pending.list",
    "POST /v1/pending/{id}/confirm": "pending.confirm",
    "POST /v1/pending/{id}/dismiss": "pending.dismiss",
    "POST /v1/forget": "forget",
    "GET /v1/receipts": "receipts",
    "GET /v1/schema": "schema.get",
    "POST /v1/schema": "schema.apply",
    "POST /v1/replay": "replay",
    "POST /mcp": "mcp",
}


def _drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


# Health and the document.


def health() -> Op:
    return Op("GET", "/healthz", parse=m.Health.model_validate, idempotent=True)


def ready() -> Op:
    return Op("GET", "/readyz", parse=m.Ok.model_validate, idempotent=True)


def openapi() -> Op:
    return Op("GET", "/openapi.json", idempotent=True)


def metrics() -> Op:
    return Op("GET", "/metrics", text=True, idempotent=True, headers={"Accept": "text/plain"})


# Episodes and their extractions.


def add_episode(
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
) -> Op:
    req = m.EpisodeRequest(
        content=content, episode_id=episode_id, session=session, kind=kind, occurred_at=instant(occurred_at),
        metadata=dict(metadata) if metadata is not None else None, idempotency_key=idempotency_key,
        retention=retention, subjects=list(subjects) if subjects is not None else None, extract=extract,
    )
    # An identical episode under the same id, or the same idempotency key and
    # content, is the stored one (sgam.Store.AddEpisode): safe to send again.
    return Op("POST", "/v1/episodes", json=req.model_dump(exclude_none=True), parse=m.EpisodeResponse.model_validate,
              idempotent=bool(episode_id or idempotency_key))


def list_episodes(*, session: str | None = None, limit: int | None = None) -> Op:
    return Op("GET", "/v1/episodes", query={"session": session, "limit": limit},
              parse=lambda d: m.EpisodeList.model_validate(d).episodes, idempotent=True)


def get_episode(episode_id: str) -> Op:
    return Op("GET", "/v1/episodes/{id}", path_params={"id": episode_id}, parse=m.Episode.model_validate, idempotent=True)


def list_extractions(episode_id: str) -> Op:
    return Op("GET", "/v1/episodes/{id}/extractions", path_params={"id": episode_id},
              parse=lambda d: m.ExtractionList.model_validate(d).extractions, idempotent=True)


# Facts.


def assert_fact(subject: str, attribute: str, value: Any, *, source: str, valid_from: Instant | None = None,
                route: str = "/v1/facts") -> Op:
    req = m.AssertRequest(subject=subject, attribute=attribute, value=value,
                          valid_from=instant(valid_from, default_now=True) or "", source=source)
    # The instant is fixed here, once: a retry sends the same assertion, which
    # the ledger takes as an idempotent repeat (docs/ledger.md, rule 1).
    return Op("POST", route, json=_assertion_body(req), parse=m.WriteResult.model_validate, idempotent=True)


def _assertion_body(req: m.AssertRequest) -> dict[str, Any]:
    return {"subject": req.subject, "attribute": req.attribute, "value": req.value, "valid_from": req.valid_from,
            "source": req.source}


class _NotGiven:
    """The default of an optional argument that may also be given as None (a set member)."""

    def __repr__(self) -> str:
        return "NOT_GIVEN"


_UNSET: Any = _NotGiven()


def retract_fact(subject: str, attribute: str, *, source: str, at: Instant | None = None, value: Any = _UNSET,
                 route: str = "/v1/facts/retract") -> Op:
    req = m.RetractRequest(subject=subject, attribute=attribute, at=instant(at, default_now=True) or "", source=source)
    body: dict[str, Any] = {"subject": req.subject, "attribute": req.attribute, "at": req.at, "source": req.source}
    if value is not _UNSET:
        body["value"] = value
    return Op("POST", route, json=body, parse=m.WriteResult.model_validate, idempotent=True)


def trace(fact_id: int) -> Op:
    return Op("GET", "/v1/facts/{id}/trace", path_params={"id": int(fact_id)}, parse=m.Trace.model_validate,
              idempotent=True)


# Recall.


def recall(
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
) -> Op:
    req = m.RecallRequest(
        question=question, subjects=list(subjects) if subjects is not None else None,
        attributes=list(attributes) if attributes is not None else None, as_of=instant(as_of),
        known_at=instant(known_at), budget=budget, evidence=evidence, evidence_limit=evidence_limit, hops=hops,
        session=session,
    )
    return Op("POST", "/v1/recall", json=req.model_dump(exclude_none=True), parse=m.RecallContext.model_validate,
              idempotent=True)


# Subjects.


def _at(as_of: Instant | None, known_at: Instant | None) -> dict[str, Any]:
    return {"as_of": instant(as_of), "known_at": instant(known_at)}


def state(subject: str, *, as_of: Instant | None = None, known_at: Instant | None = None) -> Op:
    return Op("GET", "/v1/subjects/{subject}", path_params={"subject": subject}, query=_at(as_of, known_at),
              parse=lambda d: m.Facts.model_validate(d).facts, idempotent=True)


def get_value(subject: str, attribute: str, *, as_of: Instant | None = None, known_at: Instant | None = None) -> Op:
    return Op("GET", "/v1/subjects/{subject}/attributes/{attribute}",
              path_params={"subject": subject, "attribute": attribute}, query=_at(as_of, known_at),
              parse=m.AttributeValue.model_validate, idempotent=True)


def history(subject: str, attribute: str) -> Op:
    return Op("GET", "/v1/subjects/{subject}/attributes/{attribute}/history",
              path_params={"subject": subject, "attribute": attribute},
              parse=lambda d: m.Facts.model_validate(d).facts, idempotent=True)


def traverse(subject: str, path: Sequence[str] | str | None = None, *, as_of: Instant | None = None,
             known_at: Instant | None = None) -> Op:
    if path is not None and not isinstance(path, str):
        path = ",".join(path)
    return Op("GET", "/v1/subjects/{subject}/traverse", path_params={"subject": subject},
              query={"path": path or None, **_at(as_of, known_at)},
              parse=lambda d: m.HopList.model_validate(d).hops, idempotent=True)


# Sets.


def add_member(subject: str, attribute: str, member: Any, *, source: str, valid_from: Instant | None = None) -> Op:
    return assert_fact(subject, attribute, member, source=source, valid_from=valid_from, route="/v1/sets/add")


def remove_member(subject: str, attribute: str, member: Any, *, source: str, at: Instant | None = None) -> Op:
    return retract_fact(subject, attribute, source=source, at=at, value=member, route="/v1/sets/remove")


# Pending candidates.


def list_pending(*, subject: str | None = None) -> Op:
    return Op("GET", "/v1/pending", query={"subject": subject},
              parse=lambda d: m.CandidateList.model_validate(d).candidates, idempotent=True)


def confirm(pending_id: str, episode_id: str) -> Op:
    req = m.ConfirmRequest(episode_id=episode_id)
    return Op("POST", "/v1/pending/{id}/confirm", path_params={"id": pending_id}, json=req.model_dump(),
              parse=m.WriteResult.model_validate)


def dismiss(pending_id: str) -> Op:
    return Op("POST", "/v1/pending/{id}/dismiss", path_params={"id": pending_id},
              json=m.DismissRequest().model_dump(), parse=m.Ok.model_validate)


# Forget and receipts.


def forget(*, subject: str | None = None, episode_id: str | None = None, all: bool = False) -> Op:
    req = m.ForgetRequest(subject=subject, episode_id=episode_id, all=all or None)
    return Op("POST", "/v1/forget", json=req.model_dump(exclude_none=True), parse=m.Receipt.model_validate)


def receipts() -> Op:
    return Op("GET", "/v1/receipts", parse=lambda d: m.ReceiptList.model_validate(d).receipts, idempotent=True)


# Schema.


def get_schema() -> Op:
    return Op("GET", "/v1/schema", parse=m.SchemaVersion.model_validate, idempotent=True)


def apply_schema(schema: str | Mapping[str, Any], *, dry_run: bool = False) -> Op:
    if isinstance(schema, str):
        return Op("POST", "/v1/schema", query={"dry_run": True if dry_run else None}, content=schema,
                  content_type="application/yaml", parse=m.SchemaVersion.model_validate)
    return Op("POST", "/v1/schema", query={"dry_run": True if dry_run else None}, json=dict(schema),
              parse=m.SchemaVersion.model_validate)


# Replay.


def replay(script: str | Iterable[Mapping[str, Any]]) -> Op:
    if not isinstance(script, str):
        script = "".join(dumps(line) + "\n" for line in script)
    return Op("POST", "/v1/replay", content=script, content_type="application/x-ndjson",
              parse=m.ReplayResult.model_validate)


# MCP.


def mcp(message: Mapping[str, Any]) -> Op:
    return Op("POST", "/mcp", json=dict(message), headers={"Accept": "application/json, text/event-stream"})
