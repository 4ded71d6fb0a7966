/**
 * `Client`: one method per operation of the sgam HTTP API, grouped as the API
 * (and the Python SDK) is:
 *
 * | group               | methods                                                        |
 * |---------------------|----------------------------------------------------------------|
 * | (the client itself) | health, ready, openapi, metrics, recall, forget, receipts, replay, mcp |
 * | episodes            | add, list, get                                                 |
 * | extractions         | list (an episode's extraction records)                        |
 * | facts               | assert, retract, trace                                         |
 * | subjects            | state, get, history, traverse                                  |
 * | sets                | add, remove                                                    |
 * | pending             | list, confirm, dismiss                                         |
 * | schema              | get, apply                                                     |
 */
import {
  SgamError, Invalid, TransportError, UnexpectedResponse, errorFor,
} from "./errors.js";
import { formatInstant, parse, stringify } from "./json.js";
import type {
  Candidate, Episode, EpisodeRequest, EpisodeResponse, Extraction, Fact, Health, Hop, Instant, JsonInput, Ok,
  RecallContext, Receipt, ReplayResult, SchemaVersion, Trace, WriteResult,
} from "./types.js";
import { VERSION } from "./version.js";

export const DEFAULT_URL = "http://127.0.0.1:7420";

/**
 * Each operation of the API ("METHOD /route", as in server/openapi.json) and
 * the method of {@link Client} that calls it. A test fails when the document
 * has an operation that is not here.
 */
export const OPERATIONS = {
  "GET /healthz": "health",
  "GET /readyz": "ready",
  "GET /openapi.json": "openapi",
  "GET /metrics": "metrics",
  "POST /v1/episodes": "episodes.add",
  "GET /v1/episodes": "episodes.list",
  "GET /v1/episodes/{id}": "episodes.get",
  "GET /v1/episodes/{id}/extractions": "extractions.list",
  "POST /v1/facts": "facts.assert",
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
} as const;

/**
 * When a request is tried again. Only requests safe to repeat are retried
 * ({@link Op.idempotent}): reads, recall, a fact or set write (the same value
 * at the same instant is the ledger's idempotent repeat) and an episode with
 * an `episode_id` or an `idempotency_key`. They are retried after a 429 or a
 * 503 and after a transport failure, at most `maxRetries` times; the wait is
 * the server's Retry-After when it sends one, else exponential backoff from
 * `backoff` seconds, doubled each time, at most `maxBackoff`, with jitter. A
 * Retry-After longer than `maxRetryAfter` is not waited for: the error is
 * thrown at once, with its `retryAfter`.
 */
export interface RetryOptions {
  maxRetries: number;
  /** Seconds. */
  backoff: number;
  /** Seconds. */
  maxBackoff: number;
  /** Seconds. */
  maxRetryAfter: number;
}

export const DEFAULT_RETRY: Readonly<RetryOptions> = Object.freeze({ maxRetries: 3, backoff: 0.5, maxBackoff: 8, maxRetryAfter: 60 });
export const NO_RETRY: Readonly<RetryOptions> = Object.freeze({ ...DEFAULT_RETRY, maxRetries: 0 });

export interface ClientOptions {
  /** The server; default `$SGAM_URL`, else http://127.0.0.1:7420. */
  baseUrl?: string;
  /** The key (`sgam_...`); default `$SGAM_API_KEY`. Sent as a bearer token, never shown. */
  apiKey?: string;
  /** Milliseconds one attempt may take; default 60000 (the server answers within its own 30 s). */
  timeoutMs?: number;
  /** When safe requests are tried again; {@link NO_RETRY} turns retries off. */
  retry?: Partial<RetryOptions>;
  /** The fetch to send with (default: the global fetch). */
  fetch?: typeof fetch;
  /** Waits between attempts (default: a timer); tests pass one that records the waits. */
  sleep?: (seconds: number) => Promise<void>;
  /** Called before each retry, with what failed and how long it waits. */
  onRetry?: (info: { operation: string; retry: number; waitSeconds: number; error: SgamError }) => void;
  userAgent?: string;
}

/** One call of one operation of the API. */
export interface Op {
  method: string;
  /** The route's pattern, as in the OpenAPI document: `/v1/subjects/{subject}`. */
  route: string;
  pathParams?: Record<string, string | number>;
  query?: Record<string, string | number | boolean | Date | undefined | null>;
  /** A body to send as JSON (exact numbers). */
  json?: unknown;
  content?: string;
  contentType?: string;
  /** The answer is text (/metrics), not JSON. */
  text?: boolean;
  /** Safe to send again after a 429, a 503 or a lost answer. */
  idempotent?: boolean;
  headers?: Record<string, string>;
}

export type Extract = "background" | "now" | "none";

/** Options of {@link Episodes.add}: the fields of EpisodeRequest but `content`, with instants as Date or string. */
export type AddEpisodeOptions = Omit<EpisodeRequest, "content" | "occurred_at"> & { occurred_at?: Instant };
export interface AtOptions {
  as_of?: Instant;
  known_at?: Instant;
}
export interface RecallOptions extends AtOptions {
  subjects?: string[];
  attributes?: string[];
  budget?: number;
  /** auto (the default): at most evidence_limit episodes, near the best match, and only what the facts' quotes leave out when they answer; always; none. */
  evidence?: "auto" | "always" | "none";
  evidence_limit?: number;
  hops?: number;
  session?: string;
}
/** The result of GET /v1/subjects/{subject}/attributes/{attribute}: `fact` for a single value, `facts` for a set. */
export interface AttributeValue {
  fact?: Fact | null;
  facts?: Fact[];
  [key: string]: unknown;
}

const inspectSymbol = Symbol.for("nodejs.util.inspect.custom");

function opName(op: Op): string {
  return `${op.method} ${op.route}`;
}

/** The name the API's errors give a path parameter: an `{id}` is an episode's, a fact's or a pending candidate's. */
function paramField(route: string, param: string): string {
  if (param !== "id") return param;
  if (route.startsWith("/v1/episodes/")) return "episode_id";
  if (route.startsWith("/v1/facts/")) return "fact_id";
  if (route.startsWith("/v1/pending/")) return "pending_id";
  return param;
}

function buildPath(op: Op): string {
  let p = op.route;
  for (const [k, v] of Object.entries(op.pathParams ?? {})) {
    const s = String(v);
    // An empty id would name another route. A "." or ".." segment is removed
    // by the WHATWG URL parser every fetch uses, even escaped as %2E, so such
    // an id cannot reach the server (which reads %2E as "." in a subject).
    if (s === "") throw new Invalid("is required", { field: paramField(op.route, k), operation: opName(op) });
    if (s === "." || s === "..") {
      throw new Invalid(`${JSON.stringify(s)} cannot be sent as a URL path segment by fetch, even escaped`, {
        field: paramField(op.route, k), operation: opName(op),
      });
    }
    p = p.replace(`{${k}}`, encodeURIComponent(s));
  }
  return p;
}

function queryValue(v: string | number | boolean | Date): string {
  if (typeof v === "boolean") return v ? "true" : "false";
  if (v instanceof Date) return formatInstant(v);
  return String(v);
}

/** Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110). */
export function parseRetryAfter(value: string | null): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const when = Date.parse(v);
  if (Number.isNaN(when)) return null;
  return Math.max(0, (when - Date.now()) / 1000);
}

const defaultSleep = (seconds: number) => new Promise<void>((resolve) => setTimeout(resolve, seconds * 1000));

function instant(t: Instant | undefined, defaultNow = false): string | undefined {
  if (t === undefined) return defaultNow ? formatInstant(new Date()) : undefined;
  return formatInstant(t);
}

/** A client of one sgam server, acting as one API key (which decides the tenant and the role). */
export class Client {
  readonly baseUrl: string;
  readonly retry: Readonly<RetryOptions>;
  readonly timeoutMs: number;
  readonly episodes: Episodes;
  readonly extractions: Extractions;
  readonly facts: FactsGroup;
  readonly subjects: Subjects;
  readonly sets: Sets;
  readonly pending: Pending;
  readonly schema: Schema;
  #key: string | null;
  #fetch: typeof fetch;
  #sleep: (seconds: number) => Promise<void>;
  #onRetry: ClientOptions["onRetry"];
  #userAgent: string;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl || process.env.SGAM_URL || DEFAULT_URL).replace(/\/+$/, "");
    const key = options.apiKey !== undefined ? options.apiKey : process.env.SGAM_API_KEY;
    this.#key = key || null;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.retry = Object.freeze({ ...DEFAULT_RETRY, ...(options.retry ?? {}) });
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#sleep = options.sleep ?? defaultSleep;
    this.#onRetry = options.onRetry;
    this.#userAgent = options.userAgent ?? `sgam-typescript/${VERSION}`;
    this.episodes = new Episodes(this);
    this.extractions = new Extractions(this);
    this.facts = new FactsGroup(this);
    this.subjects = new Subjects(this);
    this.sets = new Sets(this);
    this.pending = new Pending(this);
    this.schema = new Schema(this);
  }

  /** Whether the client has a key (never the key itself). */
  get hasApiKey(): boolean {
    return this.#key !== null;
  }

  toString(): string {
    return `Client(baseUrl=${JSON.stringify(this.baseUrl)}, apiKey=<${this.#key ? "set" : "none"}>)`;
  }

  toJSON(): Record<string, unknown> {
    return { baseUrl: this.baseUrl, apiKey: this.#key ? "<set>" : "<none>" };
  }

  [inspectSymbol](): string {
    return this.toString();
  }

  /** Send one operation, retrying it as {@link RetryOptions} says. */
  async call<T = unknown>(op: Op): Promise<T> {
    let retries = 0;
    for (;;) {
      let failure: SgamError;
      try {
        return (await this.#once(op)) as T;
      } catch (e) {
        if (!(e instanceof SgamError)) throw e;
        failure = e;
      }
      const wait = this.#retryWait(op, retries, failure);
      if (wait === null) throw failure;
      this.#onRetry?.({ operation: opName(op), retry: retries + 1, waitSeconds: wait, error: failure });
      await this.#sleep(wait);
      retries++;
    }
  }

  async #once(op: Op): Promise<unknown> {
    const name = opName(op);
    const headers: Record<string, string> = { Accept: "application/json", "User-Agent": this.#userAgent, ...(op.headers ?? {}) };
    if (this.#key) headers.Authorization = `Bearer ${this.#key}`;
    let body: string | undefined;
    if (op.json !== undefined) {
      body = stringify(op.json);
      headers["Content-Type"] = "application/json";
    } else if (op.content !== undefined) {
      body = op.content;
      headers["Content-Type"] = op.contentType ?? "text/plain; charset=utf-8";
    }
    const url = new URL(this.baseUrl + buildPath(op));
    for (const [k, v] of Object.entries(op.query ?? {})) {
      if (v !== undefined && v !== null) url.searchParams.set(k, queryValue(v));
    }
    let resp: Response;
    let text: string;
    try {
      resp = await this.#fetch(url, { method: op.method, headers, body, redirect: "manual", signal: AbortSignal.timeout(this.timeoutMs) });
      text = await resp.text();
    } catch (e) {
      throw transportError(name, e);
    }
    const requestId = resp.headers.get("X-Request-Id");
    if (resp.status >= 300) throw errorFromAnswer(name, resp, text);
    if (op.text) return text;
    if (text === "") return null;
    try {
      return parse(text);
    } catch (e) {
      throw new UnexpectedResponse(`the answer is not JSON: ${(e as Error).message}`, { status: resp.status, requestId, operation: name });
    }
  }

  #retryWait(op: Op, retries: number, err: SgamError): number | null {
    if (!op.idempotent || retries >= this.retry.maxRetries) return null;
    if (err instanceof TransportError) return this.#backoff(retries);
    if (err.status !== 429 && err.status !== 503) return null;
    if (err.retryAfter !== null) {
      if (err.retryAfter > this.retry.maxRetryAfter) return null;
      return Math.max(0, err.retryAfter);
    }
    return this.#backoff(retries);
  }

  #backoff(retry: number): number {
    const base = Math.min(this.retry.maxBackoff, this.retry.backoff * 2 ** retry);
    return base / 2 + Math.random() * (base / 2);
  }

  // Health and the document.

  /** GET /healthz: the server is up. */
  health(): Promise<Health> {
    return this.call({ method: "GET", route: "/healthz", idempotent: true });
  }

  /** GET /readyz: the server is up and its store answers (else Unavailable). */
  ready(): Promise<Ok> {
    return this.call({ method: "GET", route: "/readyz", idempotent: true });
  }

  /** GET /openapi.json: the server's OpenAPI document. */
  openapi(): Promise<Record<string, unknown>> {
    return this.call({ method: "GET", route: "/openapi.json", idempotent: true });
  }

  /** GET /metrics: the server's Prometheus metrics, as text. */
  metrics(): Promise<string> {
    return this.call({ method: "GET", route: "/metrics", text: true, idempotent: true, headers: { Accept: "text/plain" } });
  }

  /**
   * POST /v1/recall: what memory holds to answer `question`. The answer's
   * `.rendered` is the prompt-ready block, within `budget` tokens (default 800).
   */
  async recall(question?: string, options: RecallOptions = {}): Promise<RecallContext> {
    const { as_of, known_at, ...rest } = options;
    const ctx = await this.call<RecallContext>({
      method: "POST", route: "/v1/recall", idempotent: true,
      json: { question, ...rest, as_of: instant(as_of), known_at: instant(known_at) },
    });
    // `${ctx}` is the rendered block too (not enumerable: JSON and deepEqual see the answer only).
    Object.defineProperty(ctx, "toString", { value: function (this: RecallContext) { return this.rendered; }, enumerable: false });
    return ctx;
  }

  /** POST /v1/forget (admin): delete a subject, an episode or the whole tenant for real; the audit receipt. Never retried. */
  forget(options: { subject?: string; episode_id?: string; all?: boolean }): Promise<Receipt> {
    return this.call({ method: "POST", route: "/v1/forget", json: { ...options, all: options.all || undefined } });
  }

  /** GET /v1/receipts (admin): the tenant's forget and expiry receipts, oldest first. */
  async receipts(): Promise<Receipt[]> {
    return (await this.call<{ receipts: Receipt[] }>({ method: "GET", route: "/v1/receipts", idempotent: true })).receipts;
  }

  /** POST /v1/replay (admin): run a JSONL replay script (a string, or one object per line) in the key's tenant. Never retried. */
  replay(script: string | Iterable<Record<string, unknown>>): Promise<ReplayResult> {
    const content = typeof script === "string" ? script : Array.from(script, (line) => stringify(line) + "\n").join("");
    return this.call({ method: "POST", route: "/v1/replay", content, contentType: "application/x-ndjson" });
  }

  /** POST /mcp: one MCP JSON-RPC message (stateless streamable HTTP); the JSON-RPC answer. Never retried. */
  mcp(message: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.call({ method: "POST", route: "/mcp", json: message, headers: { Accept: "application/json, text/event-stream" } });
  }
}

function transportError(operation: string, e: unknown): TransportError {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  const kind = err?.name ?? "Error";
  const why = err?.cause?.code ?? err?.cause?.message ?? err?.message ?? String(e);
  return new TransportError(`${kind}: ${why}`, { operation });
}

function errorFromAnswer(operation: string, resp: Response, text: string): SgamError {
  const status = resp.status;
  let detail: Record<string, unknown> = {};
  try {
    const data = parse(text) as { error?: unknown };
    if (data && typeof data === "object" && data.error && typeof data.error === "object") detail = data.error as Record<string, unknown>;
  } catch {
    // not JSON: a proxy's page, say
  }
  const str = (k: string): string | null => (typeof detail[k] === "string" ? (detail[k] as string) : null);
  const code = str("code");
  let message = str("message");
  if (!message) message = text.trim().slice(0, 200) || `HTTP ${status}`;
  const cls = errorFor(status, code);
  return new cls(message, {
    code: code ?? cls.defaultCode, status, field: str("field"), pointer: str("pointer"), rule: str("rule"),
    retryAfter: parseRetryAfter(resp.headers.get("Retry-After")), requestId: resp.headers.get("X-Request-Id"), operation,
  });
}

class Group {
  protected readonly c: Client;
  constructor(client: Client) {
    this.c = client;
  }
  [inspectSymbol](): string {
    return `<${this.constructor.name} of ${this.c.toString()}>`;
  }
}

export class Episodes extends Group {
  /**
   * POST /v1/episodes: capture an episode (extraction as `extract` says). Retried only
   * with an `episode_id` or an `idempotency_key` (the server takes the same one again as the stored one).
   */
  add(content: string, options: AddEpisodeOptions = {}): Promise<EpisodeResponse> {
    const { occurred_at, ...rest } = options;
    return this.c.call({
      method: "POST", route: "/v1/episodes", json: { content, ...rest, occurred_at: instant(occurred_at) },
      idempotent: Boolean(options.episode_id || options.idempotency_key),
    });
  }

  /** GET /v1/episodes: the tenant's episodes, oldest first, optionally of one session. */
  async list(options: { session?: string; limit?: number } = {}): Promise<Episode[]> {
    return (await this.c.call<{ episodes: Episode[] }>({ method: "GET", route: "/v1/episodes", query: options, idempotent: true })).episodes;
  }

  /** GET /v1/episodes/{id}. */
  get(episodeId: string): Promise<Episode> {
    return this.c.call({ method: "GET", route: "/v1/episodes/{id}", pathParams: { id: episodeId }, idempotent: true });
  }
}

export class Extractions extends Group {
  /** GET /v1/episodes/{id}/extractions: the episode's extraction records. */
  async list(episodeId: string): Promise<Extraction[]> {
    return (await this.c.call<{ extractions: Extraction[] }>({
      method: "GET", route: "/v1/episodes/{id}/extractions", pathParams: { id: episodeId }, idempotent: true,
    })).extractions;
  }
}

export interface WriteOptions {
  source: string;
}

export class FactsGroup extends Group {
  /**
   * POST /v1/facts: assert `value` from `valid_from` (default now, fixed once so
   * that a retry is the ledger's idempotent repeat).
   */
  assert(subject: string, attribute: string, value: JsonInput, options: WriteOptions & { valid_from?: Instant }): Promise<WriteResult> {
    return this.c.call({
      method: "POST", route: "/v1/facts", idempotent: true,
      json: { subject, attribute, value, valid_from: instant(options.valid_from, true), source: options.source },
    });
  }

  /** POST /v1/facts/retract: end the value at `at` (default now). */
  retract(subject: string, attribute: string, options: WriteOptions & { at?: Instant }): Promise<WriteResult> {
    return this.c.call({
      method: "POST", route: "/v1/facts/retract", idempotent: true,
      json: { subject, attribute, at: instant(options.at, true), source: options.source },
    });
  }

  /** GET /v1/facts/{id}/trace: the supersedes chain and the source episodes. */
  trace(factId: number): Promise<Trace> {
    return this.c.call({ method: "GET", route: "/v1/facts/{id}/trace", pathParams: { id: factId }, idempotent: true });
  }
}

function atQuery(o: AtOptions): Op["query"] {
  return { as_of: instant(o.as_of), known_at: instant(o.known_at) };
}

export class Subjects extends Group {
  /** GET /v1/subjects/{subject}: every current fact of the subject (at the instants given). */
  async state(subject: string, options: AtOptions = {}): Promise<Fact[]> {
    return (await this.c.call<{ facts: Fact[] }>({
      method: "GET", route: "/v1/subjects/{subject}", pathParams: { subject }, query: atQuery(options), idempotent: true,
    })).facts;
  }

  /** GET /v1/subjects/{subject}/attributes/{attribute}: the value (`fact`), or a set's members (`facts`). */
  get(subject: string, attribute: string, options: AtOptions = {}): Promise<AttributeValue> {
    return this.c.call({
      method: "GET", route: "/v1/subjects/{subject}/attributes/{attribute}", pathParams: { subject, attribute },
      query: atQuery(options), idempotent: true,
    });
  }

  /** GET .../history: every row of the key, with both windows. */
  async history(subject: string, attribute: string): Promise<Fact[]> {
    return (await this.c.call<{ facts: Fact[] }>({
      method: "GET", route: "/v1/subjects/{subject}/attributes/{attribute}/history", pathParams: { subject, attribute },
      idempotent: true,
    })).facts;
  }

  /** GET /v1/subjects/{subject}/traverse: follow `ref` attributes hop by hop. */
  async traverse(subject: string, path?: string | string[], options: AtOptions = {}): Promise<Hop[]> {
    const p = Array.isArray(path) ? path.join(",") : path;
    return (await this.c.call<{ hops: Hop[] }>({
      method: "GET", route: "/v1/subjects/{subject}/traverse", pathParams: { subject },
      query: { path: p || undefined, ...atQuery(options) }, idempotent: true,
    })).hops;
  }
}

export class Sets extends Group {
  /** POST /v1/sets/add: add a member of a set attribute from `valid_from` (default now). */
  add(subject: string, attribute: string, member: JsonInput, options: WriteOptions & { valid_from?: Instant }): Promise<WriteResult> {
    return this.c.call({
      method: "POST", route: "/v1/sets/add", idempotent: true,
      json: { subject, attribute, value: member, valid_from: instant(options.valid_from, true), source: options.source },
    });
  }

  /** POST /v1/sets/remove: end a member at `at` (default now). */
  remove(subject: string, attribute: string, member: JsonInput, options: WriteOptions & { at?: Instant }): Promise<WriteResult> {
    return this.c.call({
      method: "POST", route: "/v1/sets/remove", idempotent: true,
      json: { subject, attribute, at: instant(options.at, true), source: options.source, value: member },
    });
  }
}

export class Pending extends Group {
  /** GET /v1/pending: the candidates waiting for a confirmation or a review. */
  async list(options: { subject?: string } = {}): Promise<Candidate[]> {
    return (await this.c.call<{ candidates: Candidate[] }>({ method: "GET", route: "/v1/pending", query: options, idempotent: true })).candidates;
  }

  /** POST /v1/pending/{id}/confirm: make the candidate a fact, citing the confirming episode. */
  confirm(pendingId: string, episodeId: string): Promise<WriteResult> {
    return this.c.call({ method: "POST", route: "/v1/pending/{id}/confirm", pathParams: { id: pendingId }, json: { episode_id: episodeId } });
  }

  /** POST /v1/pending/{id}/dismiss. */
  dismiss(pendingId: string): Promise<Ok> {
    return this.c.call({ method: "POST", route: "/v1/pending/{id}/dismiss", pathParams: { id: pendingId }, json: {} });
  }
}

export class Schema extends Group {
  /** GET /v1/schema: the tenant's schema in force (or the store default). */
  get(): Promise<SchemaVersion> {
    return this.c.call({ method: "GET", route: "/v1/schema", idempotent: true });
  }

  /** POST /v1/schema (admin): apply a schema (YAML text or an object); `dry_run` shows the diff only. */
  apply(schema: string | Record<string, unknown>, options: { dry_run?: boolean } = {}): Promise<SchemaVersion> {
    const query = { dry_run: options.dry_run ? true : undefined };
    if (typeof schema === "string") {
      return this.c.call({ method: "POST", route: "/v1/schema", query, content: schema, contentType: "application/yaml" });
    }
    return this.c.call({ method: "POST", route: "/v1/schema", query, json: schema });
  }
}
