/**
 * The errors of the sgam API: one class per error code, all extending
 * {@link SgamError}. Every error the server answers is
 * `{"error": {"code", "field", "pointer", "rule", "message"}}` with one HTTP
 * status per code (docs/api.md, "Errors"):
 *
 * | code            | class          | status                                   |
 * |-----------------|----------------|------------------------------------------|
 * | invalid         | Invalid        | 400 (413 body too large, 408, 405)       |
 * | unauthenticated | Unauthorized   | 401                                      |
 * | forbidden       | Forbidden      | 403                                      |
 * | not_found       | NotFound       | 404                                      |
 * | conflict        | Conflict       | 409                                      |
 * | unavailable     | RateLimited    | 429, with retryAfter                     |
 * | unavailable     | Unavailable    | 503, retryAfter when sent                |
 * | internal        | ServerError    | 500                                      |
 *
 * A failure to reach the server is a {@link TransportError}, an answer that is
 * not the API's an {@link UnexpectedResponse}. No error holds the API key.
 */
import type { ErrorCode } from "./types.js";

const inspectSymbol = Symbol.for("nodejs.util.inspect.custom");

export interface ErrorDetails {
  code?: string | null;
  status?: number | null;
  field?: string | null;
  pointer?: string | null;
  rule?: string | null;
  retryAfter?: number | null;
  requestId?: string | null;
  operation?: string | null;
}

/** Any failure of an sgam call. */
export class SgamError extends Error {
  static readonly defaultCode: ErrorCode | null = null;
  /** The API's error code (`invalid`, `not_found`, ...), or null when the server gave none. */
  readonly code: string | null;
  /** The HTTP status, or null when no answer came. */
  readonly status: number | null;
  /** The input at fault, as the request names it (`valid_from`, `value`, `authorization`, `path`). */
  readonly field: string | null;
  /** For a value that broke a schema rule: the JSON pointer inside it (`"/zip"`; `""` is the whole value). */
  readonly pointer: string | null;
  /** The schema rule the value broke (`type`, `enum`, `pattern`, `required`, ...). */
  readonly rule: string | null;
  /** Seconds the server asked to wait (Retry-After), or null. */
  readonly retryAfter: number | null;
  /** The server's X-Request-Id of the request, for its log. */
  readonly requestId: string | null;
  /** The route, as `"POST /v1/facts"` (the pattern, never the path). */
  readonly operation: string | null;
  /** What the server said. */
  readonly detail: string;

  constructor(message: string, d: ErrorDetails = {}) {
    const ctor = new.target as unknown as typeof SgamError;
    const code = d.code ?? ctor.defaultCode ?? null;
    let pointer = d.pointer ?? null;
    if (d.rule && pointer === null) pointer = ""; // the server leaves an empty pointer out
    super(describe(message, code, d.status ?? null, d.field ?? null, pointer, d.rule ?? null, d.retryAfter ?? null, d.operation ?? null, d.requestId ?? null));
    this.name = new.target.name;
    this.detail = message;
    this.code = code;
    this.status = d.status ?? null;
    this.field = d.field ?? null;
    this.pointer = pointer;
    this.rule = d.rule ?? null;
    this.retryAfter = d.retryAfter ?? null;
    this.requestId = d.requestId ?? null;
    this.operation = d.operation ?? null;
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name, code: this.code, status: this.status, field: this.field, pointer: this.pointer,
      rule: this.rule, retryAfter: this.retryAfter, requestId: this.requestId, operation: this.operation,
      message: this.detail,
    };
  }

  [inspectSymbol](): string {
    return `${this.name}: ${this.message}`;
  }
}

function describe(msg: string, code: string | null, status: number | null, field: string | null, pointer: string | null,
  rule: string | null, retryAfter: number | null, operation: string | null, requestId: string | null): string {
  if (pointer !== null) msg = `at ${pointer || "(the whole value)"}: ${msg}`;
  if (rule) msg = `${msg} (rule ${rule})`;
  if (field) msg = `${field}: ${msg}`;
  const extra: string[] = [];
  if (status !== null) extra.push(String(status));
  if (operation) extra.push(operation);
  if (retryAfter !== null) extra.push(`retry after ${retryAfter}s`);
  if (requestId) extra.push(`request ${requestId}`);
  return `${code ?? "error"}: ${msg}${extra.length ? ` [${extra.join(", ")}]` : ""}`;
}

/** `invalid`: the input broke a rule (400; 413, 408, 405). `field` names the input; `pointer` and `rule` say where a value broke its schema. */
export class Invalid extends SgamError {
  static override readonly defaultCode: ErrorCode = "invalid";
}
/** `unauthenticated` (401): the key is missing, unknown, malformed or revoked. */
export class Unauthorized extends SgamError {
  static override readonly defaultCode: ErrorCode = "unauthenticated";
}
/** `forbidden` (403): the key's role may not do this. */
export class Forbidden extends SgamError {
  static override readonly defaultCode: ErrorCode = "forbidden";
}
/** `not_found` (404): the tenant has no such thing (`field` `path`: no route). */
export class NotFound extends SgamError {
  static override readonly defaultCode: ErrorCode = "not_found";
}
/** `conflict` (409): the write contradicts what is stored; nothing was written. */
export class Conflict extends SgamError {
  static override readonly defaultCode: ErrorCode = "conflict";
}
/** `unavailable` (503): the store is busy, the model server failed, or the tenant's token budget is spent. */
export class Unavailable extends SgamError {
  static override readonly defaultCode: ErrorCode = "unavailable";
}
/** `unavailable` with status 429: the key's rate limit is spent; `retryAfter` is the seconds until a request is admitted. */
export class RateLimited extends Unavailable {}
/** `internal` (500): a fault of the server; its log has the details. */
export class ServerError extends SgamError {
  static override readonly defaultCode: ErrorCode = "internal";
}
/** The server could not be reached, or the connection broke or timed out before an answer (`status` is null). */
export class TransportError extends SgamError {}
/** An answer that is not the API's: not JSON, or not the shape documented. */
export class UnexpectedResponse extends SgamError {}

/** Each error code of the API and its class (server/openapi.json's Error schema). */
export const CODES: Readonly<Record<ErrorCode, typeof SgamError>> = {
  invalid: Invalid,
  unauthenticated: Unauthorized,
  forbidden: Forbidden,
  not_found: NotFound,
  conflict: Conflict,
  unavailable: Unavailable,
  internal: ServerError,
};

/** The class of an error answer with this status and code. */
export function errorFor(status: number, code: string | null | undefined): typeof SgamError {
  if (status === 429) return RateLimited;
  if (code && Object.hasOwn(CODES, code)) return CODES[code as ErrorCode];
  const byStatus: Record<number, typeof SgamError> = {
    400: Invalid, 405: Invalid, 408: Invalid, 413: Invalid, 401: Unauthorized, 403: Forbidden, 404: NotFound,
    409: Conflict, 503: Unavailable,
  };
  return byStatus[status] ?? (status >= 500 ? ServerError : UnexpectedResponse);
}
