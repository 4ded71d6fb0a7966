/**
 * The schemas of server/openapi.json (components.schemas) as TypeScript types,
 * written by hand. {@link SCHEMA_PROPERTIES} lists each one's property names;
 * the compiler checks that the list and the interface agree (the `Same`
 * checks at the end), and test/types.test.ts checks that the list and the
 * document agree, so an interface that drifts from the document fails the
 * build or the tests.
 *
 * A JSON value (a fact's `value`, `member`) is {@link JsonValue}: its numbers
 * are `number` or {@link JsonNumber} (see json.ts). Instants are RFC 3339
 * strings, as the server writes them.
 */
import type { JsonNumber } from "./json.js";

export type JsonValue = null | boolean | number | JsonNumber | string | JsonValue[] | { [key: string]: JsonValue };

/** A value to send: a JsonValue, or one with `bigint`s (sent as their digits) and Dates (RFC 3339 strings). */
export type JsonInput = null | boolean | number | bigint | JsonNumber | string | Date | JsonInput[] | { [key: string]: JsonInput | undefined };

/** An instant to send: a Date, or an RFC 3339 string with an offset. */
export type Instant = Date | string;

export type ErrorCode = "invalid" | "not_found" | "conflict" | "unavailable" | "internal" | "unauthenticated" | "forbidden";

export interface ErrorBody {
  error: {
    code: ErrorCode;
    field?: string;
    pointer?: string;
    rule?: string;
    message: string;
  };
}

export interface Fact {
  fact_id: number;
  tenant: string;
  subject: string;
  attribute: string;
  member?: JsonValue;
  value: JsonValue;
  tombstone?: boolean;
  valid_from: string;
  valid_to?: string | null;
  recorded_at: string;
  retracted_at?: string | null;
  supersedes?: number | null;
  sources?: string[];
  schema_version?: number;
}

export interface Episode {
  tenant: string;
  episode_id: string;
  session?: string;
  kind?: string;
  content: string;
  occurred_at: string;
  recorded_at: string;
  metadata?: { [key: string]: JsonValue };
  idempotency_key?: string;
  retention?: string;
  subjects?: string[];
}

export interface Candidate {
  pending_id: string;
  tenant: string;
  subject: string;
  attribute: string;
  member?: JsonValue;
  value: JsonValue;
  valid_from: string;
  source: string;
  reason: "review" | "sensitive" | "recurrence";
  conflicts_with?: number | null;
  recorded_at: string;
  schema_version?: number;
  signals?: number;
}

export interface WriteResult {
  fact: Fact | null;
  no_change?: boolean;
  kept?: boolean;
  pending?: Candidate;
}

export interface Facts {
  facts: Fact[];
}

export interface Trace {
  chain: Fact[];
  episodes: Episode[];
}

export interface Receipt {
  receipt_id: string;
  tenant: string;
  actor: string;
  at: string;
  kind: string;
  target: string;
  facts_deleted: number;
  facts_mended: number;
  links_removed: number;
  facts_retained: number;
  episodes_deleted: number;
  pending_deleted: number;
  fact_ids?: number[];
  episode_ids?: string[];
}

export interface SchemaVersion {
  tenant: string;
  store_default: boolean;
  version: number;
  hash: string;
  applied_at: string;
  schema: { [key: string]: JsonValue };
  diff?: string[];
}

export interface Hop {
  depth: number;
  from: string;
  attribute: string;
  to: string;
  fact: Fact;
  cycle?: boolean;
}

export interface Health {
  ok: boolean;
  version: string;
}

export interface Ok {
  ok: boolean;
}

export interface AssertRequest {
  subject: string;
  attribute: string;
  value: JsonInput;
  valid_from: string;
  source: string;
}

export interface RetractRequest {
  subject: string;
  attribute: string;
  at: string;
  source: string;
  value?: JsonInput;
}

export interface EpisodeRequest {
  episode_id?: string;
  session?: string;
  kind?: string;
  content: string;
  occurred_at?: string;
  metadata?: { [key: string]: JsonValue } | null;
  idempotency_key?: string;
  retention?: string;
  subjects?: string[];
  extract?: "background" | "now" | "none";
}

export interface EpisodeResponse extends Episode {
  queued?: boolean;
  extraction?: Extraction;
}

export interface AcceptedUpdate {
  index: number;
  evidence?: string;
  subject: string;
  attribute: string;
  change: "new" | "update" | "retract" | "no_change";
  value?: JsonValue;
  valid_from?: string;
  outcome: "written" | "unchanged" | "kept" | "pending";
  fact_id?: number;
  pending_id?: string;
}

export interface RejectedUpdate {
  index: number;
  update?: JsonValue;
  reason:
    | "ungrounded"
    | "unknown_attribute"
    | "invalid_value"
    | "invalid_subject"
    | "invalid_valid_from"
    | "invalid_change"
    | "unexpected_field"
    | "malformed"
    | "conflict";
  field?: string;
  message: string;
}

export interface Extraction {
  extraction_id: string;
  tenant: string;
  episode_id: string;
  at: string;
  status: "done" | "rejected" | "failed";
  model?: string;
  mode?: "json_schema" | "json_object" | "tools";
  schema_version?: number;
  prompt_digest?: string;
  content_digest?: string;
  shown_at?: string;
  context_episodes?: string[];
  subjects?: string[];
  shown_facts?: number[];
  prompt?: string;
  raw_output?: string;
  raw_output_cut?: boolean;
  cached?: boolean;
  cached_from?: string;
  accepted?: AcceptedUpdate[];
  rejected?: RejectedUpdate[];
  warnings?: string[];
  unchanged?: number;
  facts?: number[];
  pending?: string[];
  tokens_in?: number;
  tokens_out?: number;
  calls?: number;
  latency_ns?: number;
  error?: string;
  gave_up?: boolean;
}

export interface RecallRequest {
  question?: string;
  subjects?: string[];
  attributes?: string[];
  as_of?: string;
  known_at?: string;
  budget?: number;
  evidence?: "auto" | "always" | "none";
  evidence_limit?: number;
  hops?: number;
  session?: string;
}

export interface RecallFact extends Fact {
  status?: "current" | "past";
  quote?: string;
  via?: number;
}

export interface Superseded {
  subject: string;
  attribute: string;
  member?: JsonValue;
  value?: JsonValue;
  fact_id: number;
  how: "replaced" | "revoked" | "removed" | "ended" | "retracted";
  until?: string;
  by_fact?: number;
  by_episode?: string;
}

/** An asked key without a value at the read's instants (the block's "none" line). */
export interface Absent {
  subject: string;
  attribute: string;
  /** The row whose end left the key without a value (a tombstone, or a value whose validity ran out), with its quote; null when none was ever believed. */
  ended: RecallFact | null;
}

export interface Evidence {
  episode_id: string;
  session?: string;
  occurred_at: string;
  score?: number;
  snippet: string;
  superseded?: Superseded[];
}

export interface RecallContext {
  question?: string;
  as_of?: string;
  known_at?: string;
  instants?: { as_of?: string; known_at?: string };
  subjects?: string[];
  attributes?: string[];
  facts: RecallFact[];
  absent?: Absent[];
  evidence?: Evidence[];
  related?: RecallFact[];
  /** The prompt-ready block: facts at the instants asked, with sources and quotes, then evidence. */
  rendered: string;
  tokens: number;
  budget: number;
  omitted?: { facts?: number; related?: number; evidence?: number };
  search?: string;
  warnings?: string[];
}

/** The result of POST /v1/replay (the document leaves its shape open). */
export interface ReplayResult {
  lines: number;
  failed: number;
  results: { [key: string]: JsonValue }[];
  [key: string]: unknown;
}

/**
 * Each schema of the document (and each inline object type named above), by
 * its name in the document ("Extraction.accepted[]" is the item of an array
 * property), with its property names. For allOf schemas, the properties of
 * all their parts.
 */
export const SCHEMA_PROPERTIES = {
  Error: ["error"],
  "Error.error": ["code", "field", "pointer", "rule", "message"],
  Fact: ["fact_id", "tenant", "subject", "attribute", "member", "value", "tombstone", "valid_from", "valid_to", "recorded_at", "retracted_at", "supersedes", "sources", "schema_version"],
  Episode: ["tenant", "episode_id", "session", "kind", "content", "occurred_at", "recorded_at", "metadata", "idempotency_key", "retention", "subjects"],
  Candidate: ["pending_id", "tenant", "subject", "attribute", "member", "value", "valid_from", "source", "reason", "conflicts_with", "recorded_at", "schema_version", "signals"],
  WriteResult: ["fact", "no_change", "kept", "pending"],
  Facts: ["facts"],
  Trace: ["chain", "episodes"],
  Receipt: ["receipt_id", "tenant", "actor", "at", "kind", "target", "facts_deleted", "facts_mended", "links_removed", "facts_retained", "episodes_deleted", "pending_deleted", "fact_ids", "episode_ids"],
  SchemaVersion: ["tenant", "store_default", "version", "hash", "applied_at", "schema", "diff"],
  Hop: ["depth", "from", "attribute", "to", "fact", "cycle"],
  Health: ["ok", "version"],
  Ok: ["ok"],
  AssertRequest: ["subject", "attribute", "value", "valid_from", "source"],
  RetractRequest: ["subject", "attribute", "at", "source", "value"],
  EpisodeRequest: ["episode_id", "session", "kind", "content", "occurred_at", "metadata", "idempotency_key", "retention", "subjects", "extract"],
  EpisodeResponse: ["tenant", "episode_id", "session", "kind", "content", "occurred_at", "recorded_at", "metadata", "idempotency_key", "retention", "subjects", "queued", "extraction"],
  Extraction: ["extraction_id", "tenant", "episode_id", "at", "status", "model", "mode", "schema_version", "prompt_digest", "content_digest", "shown_at", "context_episodes", "subjects", "shown_facts", "prompt", "raw_output", "raw_output_cut", "cached", "cached_from", "accepted", "rejected", "warnings", "unchanged", "facts", "pending", "tokens_in", "tokens_out", "calls", "latency_ns", "error", "gave_up"],
  "Extraction.accepted[]": ["index", "evidence", "subject", "attribute", "change", "value", "valid_from", "outcome", "fact_id", "pending_id"],
  "Extraction.rejected[]": ["index", "update", "reason", "field", "message"],
  RecallRequest: ["question", "subjects", "attributes", "as_of", "known_at", "budget", "evidence", "evidence_limit", "hops", "session"],
  RecallFact: ["fact_id", "tenant", "subject", "attribute", "member", "value", "tombstone", "valid_from", "valid_to", "recorded_at", "retracted_at", "supersedes", "sources", "schema_version", "status", "quote", "via"],
  RecallContext: ["question", "as_of", "known_at", "instants", "subjects", "attributes", "facts", "absent", "evidence", "related", "rendered", "tokens", "budget", "omitted", "search", "warnings"],
  "RecallContext.instants": ["as_of", "known_at"],
  "RecallContext.absent[]": ["subject", "attribute", "ended"],
  "RecallContext.evidence[]": ["episode_id", "session", "occurred_at", "score", "snippet", "superseded"],
  "RecallContext.evidence[].superseded[]": ["subject", "attribute", "member", "value", "fact_id", "how", "until", "by_fact", "by_episode"],
  "RecallContext.omitted": ["facts", "related", "evidence"],
} as const;

/**
 * Each entry's enum values, where the document lists them ("Schema.property").
 * test/types.test.ts checks them against the document too.
 */
export const SCHEMA_ENUMS = {
  "Error.error.code": ["invalid", "not_found", "conflict", "unavailable", "internal", "unauthenticated", "forbidden"],
  "Candidate.reason": ["review", "sensitive", "recurrence"],
  "EpisodeRequest.extract": ["background", "now", "none"],
  "Extraction.status": ["done", "rejected", "failed"],
  "Extraction.mode": ["json_schema", "json_object", "tools"],
  "Extraction.accepted[].change": ["new", "update", "retract", "no_change"],
  "Extraction.accepted[].outcome": ["written", "unchanged", "kept", "pending"],
  "Extraction.rejected[].reason": ["ungrounded", "unknown_attribute", "invalid_value", "invalid_subject", "invalid_valid_from", "invalid_change", "unexpected_field", "malformed", "conflict"],
  "RecallRequest.evidence": ["auto", "always", "none"],
  "RecallFact.status": ["current", "past"],
  "RecallContext.evidence[].superseded[].how": ["replaced", "revoked", "removed", "ended", "retracted"],
} as const;

/**
 * The properties the document marks required, per schema that has a
 * `required` list; the interface must not make them optional (checked by the
 * compiler below, and against the document by test/types.test.ts).
 */
export const SCHEMA_REQUIRED = {
  Error: ["error"],
  "Error.error": ["code", "message"],
  WriteResult: ["fact"],
  AssertRequest: ["subject", "attribute", "value", "valid_from", "source"],
  RetractRequest: ["subject", "attribute", "at", "source"],
  EpisodeRequest: ["content"],
} as const;

// The compiler's half of the check: each interface has exactly the listed
// properties, and each union type exactly the listed values.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Names<K extends keyof typeof SCHEMA_PROPERTIES> = (typeof SCHEMA_PROPERTIES)[K][number];
type Values<K extends keyof typeof SCHEMA_ENUMS> = (typeof SCHEMA_ENUMS)[K][number];
type Check<T extends true> = T;
type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T];
type Req<K extends keyof typeof SCHEMA_REQUIRED> = (typeof SCHEMA_REQUIRED)[K][number];
type Covers<T, K> = [K] extends [RequiredKeys<T>] ? true : false;

export type _TypesMatchTheDocument = [
  Check<Same<keyof ErrorBody, Names<"Error">>>,
  Check<Same<keyof ErrorBody["error"], Names<"Error.error">>>,
  Check<Same<keyof Fact, Names<"Fact">>>,
  Check<Same<keyof Episode, Names<"Episode">>>,
  Check<Same<keyof Candidate, Names<"Candidate">>>,
  Check<Same<keyof WriteResult, Names<"WriteResult">>>,
  Check<Same<keyof Facts, Names<"Facts">>>,
  Check<Same<keyof Trace, Names<"Trace">>>,
  Check<Same<keyof Receipt, Names<"Receipt">>>,
  Check<Same<keyof SchemaVersion, Names<"SchemaVersion">>>,
  Check<Same<keyof Hop, Names<"Hop">>>,
  Check<Same<keyof Health, Names<"Health">>>,
  Check<Same<keyof Ok, Names<"Ok">>>,
  Check<Same<keyof AssertRequest, Names<"AssertRequest">>>,
  Check<Same<keyof RetractRequest, Names<"RetractRequest">>>,
  Check<Same<keyof EpisodeRequest, Names<"EpisodeRequest">>>,
  Check<Same<keyof EpisodeResponse, Names<"EpisodeResponse">>>,
  Check<Same<keyof Extraction, Names<"Extraction">>>,
  Check<Same<keyof AcceptedUpdate, Names<"Extraction.accepted[]">>>,
  Check<Same<keyof RejectedUpdate, Names<"Extraction.rejected[]">>>,
  Check<Same<keyof RecallRequest, Names<"RecallRequest">>>,
  Check<Same<keyof RecallFact, Names<"RecallFact">>>,
  Check<Same<keyof RecallContext, Names<"RecallContext">>>,
  Check<Same<keyof NonNullable<RecallContext["instants"]>, Names<"RecallContext.instants">>>,
  Check<Same<keyof Absent, Names<"RecallContext.absent[]">>>,
  Check<Same<keyof Evidence, Names<"RecallContext.evidence[]">>>,
  Check<Same<keyof Superseded, Names<"RecallContext.evidence[].superseded[]">>>,
  Check<Same<keyof NonNullable<RecallContext["omitted"]>, Names<"RecallContext.omitted">>>,
  Check<Covers<ErrorBody, Req<"Error">>>,
  Check<Covers<ErrorBody["error"], Req<"Error.error">>>,
  Check<Covers<WriteResult, Req<"WriteResult">>>,
  Check<Covers<AssertRequest, Req<"AssertRequest">>>,
  Check<Covers<RetractRequest, Req<"RetractRequest">>>,
  Check<Covers<EpisodeRequest, Req<"EpisodeRequest">>>,
  Check<Same<ErrorCode, Values<"Error.error.code">>>,
  Check<Same<Candidate["reason"], Values<"Candidate.reason">>>,
  Check<Same<NonNullable<EpisodeRequest["extract"]>, Values<"EpisodeRequest.extract">>>,
  Check<Same<Extraction["status"], Values<"Extraction.status">>>,
  Check<Same<NonNullable<Extraction["mode"]>, Values<"Extraction.mode">>>,
  Check<Same<AcceptedUpdate["change"], Values<"Extraction.accepted[].change">>>,
  Check<Same<AcceptedUpdate["outcome"], Values<"Extraction.accepted[].outcome">>>,
  Check<Same<RejectedUpdate["reason"], Values<"Extraction.rejected[].reason">>>,
  Check<Same<NonNullable<RecallRequest["evidence"]>, Values<"RecallRequest.evidence">>>,
  Check<Same<NonNullable<RecallFact["status"]>, Values<"RecallFact.status">>>,
  Check<Same<Superseded["how"], Values<"RecallContext.evidence[].superseded[].how">>>,
];
