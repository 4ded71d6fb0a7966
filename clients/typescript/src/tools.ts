/**
 * `remember`, `recall` and `forget` for agents, framework-free.
 *
 * {@link MemoryTools} holds the logic the Vercel AI SDK adapter wraps
 * (`@sgam/client/ai`), as `sgam.tools.MemoryTools` does for the Python
 * adapters: each tool is bound to the tenant of one API key, which is never a
 * tool argument (as in sgam's MCP server), and answers the model with text:
 * what was written, the recalled block, or the error
 * (`error: invalid: attribute: ...`), never the key.
 *
 * - `remember({ subject, attribute, value, quote })`: captures `quote` (what
 *   was said) as an episode and asserts the value from now on, citing it.
 *   `value` is JSON text (`"teal"` with its quotes, `42`, `{"city": "Oslo"}`);
 *   text that is not JSON is taken as a string.
 * - `recall({ question })`: `recall(question).rendered`, the prompt-ready block.
 * - `forget({ subject, attribute, quote })`: captures `quote` and retracts the
 *   value from now on. A retraction, not an erasure: history keeps the old
 *   value (erasing is `Client.forget`, an admin's call, never a model's tool).
 */
import { Client } from "./client.js";
import { sha256Hex } from "./digest.js";
import { SgamError } from "./errors.js";
import { parse, stringify } from "./json.js";
import type { JsonValue, WriteResult } from "./types.js";

/** What the model is told `remember` does (the Python SDK's words). */
export const REMEMBER =
  "Remember a fact about a subject (a person, an account, a task) for later conversations: its " +
  "attribute's value from now on, with the words that state it. Use a lowercase id for the subject " +
  "(mira, acct-42) and a lowercase_identifier for the attribute (favorite_color). value is JSON text: " +
  '"teal" (with quotes), 42, true, {"city": "Oslo"}. quote is what was said, word for word.';
/** What the model is told `recall` does. */
export const RECALL =
  "Recall what memory holds to answer a question: the current values of the subjects and attributes " +
  "it names (or their values at the instants it names: 'on June 2', 'last week'), each with its source, " +
  "then matching earlier conversation. Returns a prompt-ready block.";
/** What the model is told `forget` does. */
export const FORGET =
  "Record that a subject's attribute no longer holds (the user withdrew or corrected it), from now on, " +
  "with the words that say so. Earlier values stay in memory's history.";

/** Each tool's arguments and what the model is told about each. */
export const ARGUMENTS = {
  remember: {
    subject: "the subject's lowercase id: mira, acct-42",
    attribute: "the attribute, a lowercase_identifier: favorite_color",
    value: 'the value as JSON text: "teal" (with quotes), 42, true, {"city": "Oslo"}',
    quote: "what was said that states it, word for word",
  },
  recall: {
    question: "the question, in words; the subjects, attributes and instants it names",
  },
  forget: {
    subject: "the subject's lowercase id",
    attribute: "the attribute that no longer holds",
    quote: "what was said that withdraws it, word for word",
  },
} as const;

export interface RememberInput {
  subject: string;
  attribute: string;
  value: string;
  quote: string;
}
export interface RecallInput {
  question: string;
}
export interface ForgetInput {
  subject: string;
  attribute: string;
  quote: string;
}

export interface MemoryToolsOptions {
  /** The conversation the tools' episodes belong to, and the session recall takes subjects in play from. */
  session?: string;
  /**
   * The kind of the episodes `remember` and `forget` capture (default `message`: what a user said;
   * `user_confirmed` makes a `sensitive` attribute a fact at once, so grant it with care).
   */
  kind?: string;
  /** The most tokens recall's block may take (default the server's, 800). */
  budget?: number;
}

function valueOf(text: string): JsonValue {
  try {
    return parse(text) as JsonValue;
  } catch {
    return text;
  }
}

/**
 * The idempotency key of a tool's episode: the same call, retried, is the
 * same episode. The same digest as the Python SDK's, so either SDK retrying
 * the other's call writes no second episode.
 */
async function episodeKey(...parts: string[]): Promise<string> {
  return "tool-sha256:" + (await sha256Hex(parts.join("\x00")));
}

function describe(verb: string, subject: string, attribute: string, res: WriteResult): string {
  if (res.pending) {
    return `held for review, not yet a fact: ${subject} ${attribute} (pending ${res.pending.pending_id}, reason ${res.pending.reason})`;
  }
  if (res.kept) return `kept the stored value of ${subject} ${attribute}: the schema's conflict policy preferred it`;
  const f = res.fact;
  if (!f) return `${verb}: ${subject} ${attribute}`;
  const what = f.tombstone ? "no value" : stringify(f.value);
  return `${verb}: ${subject} ${attribute} = ${what} from ${f.valid_from} (fact ${f.fact_id})${res.no_change ? " (no change)" : ""}`;
}

/** The three tools over one key's tenant; each resolves to the text the model reads. */
export class MemoryTools {
  readonly client: Client;
  readonly session: string | undefined;
  readonly kind: string;
  readonly budget: number | undefined;

  /** `client` defaults to `new Client()` ($SGAM_URL, $SGAM_API_KEY). */
  constructor(client: Client = new Client(), options: MemoryToolsOptions = {}) {
    this.client = client;
    this.session = options.session;
    this.kind = options.kind ?? "message";
    this.budget = options.budget;
  }

  /** Remember that `subject`'s `attribute` is `value` (JSON text) from now on, as `quote` says. */
  remember({ subject, attribute, value, quote }: RememberInput): Promise<string> {
    return this.#answer(async () => {
      const ep = await this.client.episodes.add(quote, {
        session: this.session, kind: this.kind, extract: "none",
        idempotency_key: await episodeKey("remember", this.session ?? "", subject, attribute, value, quote),
      });
      const res = await this.client.facts.assert(subject, attribute, valueOf(value), { source: ep.episode_id });
      return describe("remembered", subject, attribute, res);
    });
  }

  /** The prompt-ready block of what memory holds to answer `question`. */
  recall({ question }: RecallInput): Promise<string> {
    return this.#answer(async () => (await this.client.recall(question, { session: this.session, budget: this.budget })).rendered);
  }

  /** Retract `subject`'s `attribute` from now on, as `quote` says. */
  forget({ subject, attribute, quote }: ForgetInput): Promise<string> {
    return this.#answer(async () => {
      const ep = await this.client.episodes.add(quote, {
        session: this.session, kind: this.kind, extract: "none",
        idempotency_key: await episodeKey("forget", this.session ?? "", subject, attribute, quote),
      });
      const res = await this.client.facts.retract(subject, attribute, { source: ep.episode_id });
      return describe("forgot", subject, attribute, res);
    });
  }

  toString(): string {
    return `MemoryTools(${this.client}, session=${JSON.stringify(this.session ?? null)})`;
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }

  // An error of the API is the tool's answer, so that the model can correct
  // its call; the error's text names the code and field, never the key.
  async #answer(run: () => Promise<string>): Promise<string> {
    try {
      return await run();
    } catch (e) {
      if (e instanceof SgamError) return `error: ${e.message}`;
      throw e;
    }
  }
}
