"""Pydantic models of every request and answer of the sgam HTTP API.

Each model is named as its schema in ``server/openapi.json``
(``components/schemas``), and the inline schemas of the routes have models
of their own (:class:`EpisodeList`, :class:`AttributeValue`, ...); a test
fails when a model and the document disagree on a property.

Answers are read leniently (a property the server adds later is kept, not
refused: ``extra="allow"``), requests strictly (``extra="forbid"``, as the
server refuses an unknown field).

Values (``Fact.value``, ``Fact.member``, ``Candidate.value``, ...) are any JSON
value, read exactly: an integer is an ``int``, any other number a
:class:`sgam.Number` (a :class:`decimal.Decimal` that keeps its digits), never a
float. Instants are timezone-aware :class:`datetime.datetime` values (UTC,
microseconds, as the store keeps them).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Answer",
    "ErrorDetail",
    "Error",
    "Fact",
    "Episode",
    "Candidate",
    "WriteResult",
    "Facts",
    "Trace",
    "Receipt",
    "SchemaVersion",
    "Hop",
    "Ok",
    "Health",
    "AssertRequest",
    "RetractRequest",
    "EpisodeRequest",
    "EpisodeResponse",
    "Extraction",
    "ExtractionAccepted",
    "ExtractionRejected",
    "RecallRequest",
    "RecallFact",
    "RecallContext",
    "RecallInstants",
    "RecallEvidence",
    "RecallSuperseded",
    "RecallOmitted",
    "EpisodeList",
    "ExtractionList",
    "AttributeValue",
    "HopList",
    "CandidateList",
    "ConfirmRequest",
    "DismissRequest",
    "ForgetRequest",
    "ReceiptList",
    "ReplayResult",
]


class Answer(BaseModel):
    """Base of every answer: unknown properties are kept (``model_extra``)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Request(BaseModel):
    """Base of every request body: unknown fields are refused, as the server does."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ErrorDetail(Answer):
    code: Literal["invalid", "not_found", "conflict", "unavailable", "internal", "unauthenticated", "forbidden"] | str
    field: str | None = None
    pointer: str | None = None
    rule: str | None = None
    message: str = ""


class Error(Answer):
    """An error answer: ``{"error": {...}}`` (raised as :class:`sgam.Error`)."""

    error: ErrorDetail


class Fact(Answer):
    """One row of the ledger: a value with its valid window and its belief window."""

    fact_id: int | None = None
    tenant: str | None = None
    subject: str | None = None
    attribute: str | None = None
    member: Any = None
    """The set member this row opens or closes; ``None`` for a single value."""
    value: Any = None
    """The value, exactly (``None`` with ``tombstone`` for a retraction)."""
    tombstone: bool = False
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    recorded_at: datetime | None = None
    retracted_at: datetime | None = None
    supersedes: int | None = None
    sources: list[str] = Field(default_factory=list)
    schema_version: int | None = None


class Episode(Answer):
    """A captured input: what facts cite as their sources."""

    tenant: str | None = None
    episode_id: str | None = None
    session: str | None = None
    kind: str | None = None
    content: str | None = None
    occurred_at: datetime | None = None
    recorded_at: datetime | None = None
    metadata: dict[str, Any] | None = None
    idempotency_key: str | None = None
    retention: str | None = None
    subjects: list[str] | None = None


class Candidate(Answer):
    """A value held back from becoming a fact (review, sensitive, recurrence)."""

    pending_id: str | None = None
    tenant: str | None = None
    subject: str | None = None
    attribute: str | None = None
    member: Any = None
    value: Any = None
    valid_from: datetime | None = None
    source: str | None = None
    reason: Literal["review", "sensitive", "recurrence"] | str | None = None
    conflicts_with: int | None = None
    recorded_at: datetime | None = None
    schema_version: int | None = None
    signals: int | None = None


class WriteResult(Answer):
    """What a write did: the row written (``None`` when held as pending),
    ``no_change`` for a repeat, ``kept`` when a conflict policy kept the stored
    value, ``pending`` the candidate held back."""

    fact: Fact | None
    no_change: bool = False
    kept: bool = False
    pending: Candidate | None = None


class Facts(Answer):
    facts: list[Fact] = Field(default_factory=list)


class Trace(Answer):
    """A fact's supersedes chain (the fact first) and the source episodes of each row."""

    chain: list[Fact] = Field(default_factory=list)
    episodes: list[Episode] = Field(default_factory=list)


class Receipt(Answer):
    """The audit record of a forget or an expiry run."""

    receipt_id: str | None = None
    tenant: str | None = None
    actor: str | None = None
    at: datetime | None = None
    kind: str | None = None
    target: str | None = None
    facts_deleted: int = 0
    facts_mended: int = 0
    links_removed: int = 0
    facts_retained: int = 0
    episodes_deleted: int = 0
    pending_deleted: int = 0
    fact_ids: list[int] | None = None
    episode_ids: list[str] | None = None


class SchemaVersion(Answer):
    """The schema in force for the key's tenant (``GET``), or the version applied (``POST``)."""

    tenant: str | None = None
    store_default: bool = False
    version: int = 0
    hash: str | None = None
    applied_at: datetime | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    diff: list[str] | None = None


class Hop(Answer):
    """One step of a traversal along ``ref`` attributes."""

    depth: int | None = None
    from_: str | None = Field(default=None, alias="from")
    attribute: str | None = None
    to: str | None = None
    fact: Fact | None = None
    cycle: bool = False


class Ok(Answer):
    ok: bool = False


class Health(Answer):
    """The answer of ``GET /healthz``: the server is up, and its build version."""

    ok: bool = False
    version: str | None = None


class AssertRequest(Request):
    """Body of ``POST /v1/facts`` and ``POST /v1/sets/add`` (the member in ``value``)."""

    subject: str
    attribute: str
    value: Any
    valid_from: str
    source: str


class RetractRequest(Request):
    """Body of ``POST /v1/facts/retract`` and ``POST /v1/sets/remove`` (the member in ``value``)."""

    subject: str
    attribute: str
    at: str
    source: str
    value: Any = None


class EpisodeRequest(Request):
    """Body of ``POST /v1/episodes``."""

    content: str
    episode_id: str | None = None
    session: str | None = None
    kind: str | None = None
    occurred_at: str | None = None
    metadata: dict[str, Any] | None = None
    idempotency_key: str | None = None
    retention: str | None = None
    subjects: list[str] | None = None
    extract: Literal["background", "now", "none"] | None = None


class ExtractionAccepted(Answer):
    index: int | None = None
    evidence: str | None = None
    subject: str | None = None
    attribute: str | None = None
    change: Literal["new", "update", "retract", "no_change"] | str | None = None
    value: Any = None
    valid_from: datetime | None = None
    outcome: Literal["written", "unchanged", "kept", "pending"] | str | None = None
    fact_id: int | None = None
    pending_id: str | None = None


class ExtractionRejected(Answer):
    index: int | None = None
    update: Any = None
    reason: str | None = None
    field: str | None = None
    message: str | None = None


class Extraction(Answer):
    """The record of one extraction attempt of an episode."""

    extraction_id: str | None = None
    tenant: str | None = None
    episode_id: str | None = None
    at: datetime | None = None
    status: Literal["done", "rejected", "failed"] | str | None = None
    model: str | None = None
    mode: str | None = None
    schema_version: int | None = None
    prompt_digest: str | None = None
    content_digest: str | None = None
    shown_at: datetime | None = None
    context_episodes: list[str] | None = None
    subjects: list[str] | None = None
    shown_facts: list[int] | None = None
    prompt: str | None = None
    raw_output: str | None = None
    raw_output_cut: bool = False
    cached: bool = False
    cached_from: str | None = None
    accepted: list[ExtractionAccepted] = Field(default_factory=list)
    rejected: list[ExtractionRejected] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    unchanged: int = 0
    facts: list[int] = Field(default_factory=list)
    pending: list[str] = Field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    calls: int = 0
    latency_ns: int = 0
    error: str | None = None
    gave_up: bool = False


class EpisodeResponse(Episode):
    """The answer of ``POST /v1/episodes``: the episode as stored, whether the
    workers will extract it, and for ``extract="now"`` the extraction's record."""

    queued: bool = False
    """The extraction workers will extract it (for ``extract="now"``: the
    extraction outlived the request, answered 202, or failed in a way a retry
    may mend)."""
    extraction: Extraction | None = None


class RecallRequest(Request):
    """Body of ``POST /v1/recall``."""

    question: str | None = None
    subjects: list[str] | None = None
    attributes: list[str] | None = None
    as_of: str | None = None
    known_at: str | None = None
    budget: int | None = None
    evidence: Literal["auto", "always", "none"] | None = None
    evidence_limit: int | None = None
    hops: int | None = None
    session: str | None = None


class RecallFact(Fact):
    status: Literal["current", "past"] | str | None = None
    quote: str | None = None
    via: int | None = None


class RecallInstants(Answer):
    as_of: str | None = None
    known_at: str | None = None


class RecallSuperseded(Answer):
    """A statement of an evidence episode that is no longer current, and what ended it."""

    subject: str | None = None
    attribute: str | None = None
    member: Any = None
    value: Any = None
    fact_id: int | None = None
    how: Literal["replaced", "revoked", "removed", "ended", "retracted"] | str | None = None
    until: datetime | None = None
    by_fact: int | None = None
    by_episode: str | None = None


class RecallAbsent(Answer):
    """An asked key without a value at the read's instants (the block's "none"
    line), with the row that ended its value: ``None`` when none was ever
    believed."""

    subject: str | None = None
    attribute: str | None = None
    ended: RecallFact | None = None


class RecallEvidence(Answer):
    episode_id: str | None = None
    session: str | None = None
    occurred_at: datetime | None = None
    score: Decimal | None = None
    snippet: str | None = None
    superseded: list[RecallSuperseded] | None = None


class RecallOmitted(Answer):
    facts: int = 0
    related: int = 0
    evidence: int = 0


class RecallContext(Answer):
    """What recall found for a question: the facts at the instants asked, the
    evidence, and ``rendered``, the prompt-ready block of exactly those."""

    question: str | None = None
    as_of: datetime | None = None
    known_at: datetime | None = None
    instants: RecallInstants | None = None
    subjects: list[str] = Field(default_factory=list)
    attributes: list[str] = Field(default_factory=list)
    facts: list[RecallFact] = Field(default_factory=list)
    absent: list[RecallAbsent] = Field(default_factory=list)
    evidence: list[RecallEvidence] = Field(default_factory=list)
    related: list[RecallFact] = Field(default_factory=list)
    rendered: str = ""
    tokens: int = 0
    budget: int = 0
    omitted: RecallOmitted | None = None
    search: str | None = None
    warnings: list[str] = Field(default_factory=list)

    def __str__(self) -> str:
        return self.rendered


# The inline schemas of the routes.


class EpisodeList(Answer):
    episodes: list[Episode] = Field(default_factory=list)


class ExtractionList(Answer):
    extractions: list[Extraction] = Field(default_factory=list)


class AttributeValue(Answer):
    """``GET /v1/subjects/{subject}/attributes/{attribute}``: ``fact`` for a
    single-valued attribute (``None``: no value), ``facts`` for a set's members."""

    fact: Fact | None = None
    facts: list[Fact] | None = None


class HopList(Answer):
    hops: list[Hop] = Field(default_factory=list)


class CandidateList(Answer):
    candidates: list[Candidate] = Field(default_factory=list)


class ConfirmRequest(Request):
    """Body of ``POST /v1/pending/{id}/confirm``."""

    episode_id: str


class DismissRequest(Request):
    """Body of ``POST /v1/pending/{id}/dismiss``: no fields."""


class ForgetRequest(Request):
    """Body of ``POST /v1/forget``: exactly one of the three."""

    subject: str | None = None
    episode_id: str | None = None
    all: bool | None = None


class ReceiptList(Answer):
    receipts: list[Receipt] = Field(default_factory=list)


class ReplayResult(Answer):
    """``POST /v1/replay``: the lines run, how many failed, one result per operation."""

    lines: int = 0
    failed: int = 0
    results: list[dict[str, Any]] = Field(default_factory=list)
