/**
 * Capture in a loop: memory around every model call.
 *
 * ```ts
 * const turns = new TurnMemory(client, { session: "thread-1" });
 * for (;;) {
 *   const user = await nextUserMessage();
 *   const context = await turns.context(user);       // recall(...).rendered, before the model call
 *   const { text } = await generateText({ model, system: context, prompt: user });
 *   await turns.capture(user, text);                 // the finished turn, as an episode
 * }
 * ```
 *
 * {@link TurnMemory.context} asks recall with the user's words and the
 * session (so the subjects of the conversation's latest facts are in play) and
 * returns the prompt-ready block; {@link TurnMemory.capture} hands the
 * finished turn to sgam as one episode of the session, extracted by the
 * server's workers (`extract: "background"`): the call returns at once, and
 * what the turn said is in memory for the turns after it. The `…Messages`
 * twins take the conversation as AI SDK messages (`ModelMessage` or
 * `UIMessage`) instead. The Python SDK's `sgam.capture.TurnMemory` is the same
 * helper.
 *
 * These are calls the program makes once per turn, not a language-model
 * middleware: a middleware sees each model call, and a turn with tools is
 * several calls (one per step), so it would recall before every step and
 * could not tell a finished turn from a step that ends in tool calls.
 */
import type { Client, Extract } from "./client.js";
import { sha256Hex } from "./digest.js";
import { formatInstant } from "./json.js";
import type { EpisodeResponse, Extraction, Instant } from "./types.js";

/** A part of a message's content: the AI SDK's text parts (`{ type: "text", text }`) are read, others skipped. */
export interface MessagePart {
  type: string;
  text?: string;
}

/**
 * A chat message as the AI SDK writes one: a `ModelMessage` (`content` a
 * string or parts) or a `UIMessage` (`parts`). Roles other than `user` and
 * `assistant` (system, tool) are skipped.
 */
export interface MessageLike {
  role: string;
  content?: string | readonly MessagePart[] | unknown;
  parts?: readonly MessagePart[];
}

/** The episode's text of one turn: `User: ...` and `Assistant: ...` lines. */
export function turnText(user: string, assistant?: string | null): string {
  const lines = [`User: ${user.trim()}`];
  if (assistant) lines.push(`Assistant: ${assistant.trim()}`);
  return lines.join("\n");
}

/** The text of a message: its string content, or its text parts (reasoning, tool calls and files are not text). */
export function messageText(message: MessageLike): string {
  const content = message.parts ?? message.content;
  if (typeof content === "string") return content.trim();
  if (!Array.isArray(content)) return "";
  return content
    .filter((p): p is MessagePart => typeof p === "object" && p !== null && p.type === "text" && typeof p.text === "string")
    .map((p) => p.text!.trim())
    .filter(Boolean)
    .join("\n");
}

/** The last user message and the assistant's last answer after it (null: none yet). */
export function lastTurn(messages: readonly MessageLike[]): { user: string; assistant: string | null } {
  let user = "";
  let assistant: string | null = null;
  for (const msg of messages) {
    if (msg.role === "user") {
      user = messageText(msg);
      assistant = null;
    } else if (msg.role === "assistant") {
      assistant = messageText(msg) || assistant;
    }
  }
  return { user, assistant };
}

export interface TurnMemoryOptions {
  /** The conversation; every turn is an episode of it. */
  session: string;
  /** Ids the conversation is about: a hint for extraction (at most 32). */
  subjects?: string[];
  /** The most tokens of the recalled block (default the server's, 800). */
  budget?: number;
  /**
   * `"background"` (default: the server's workers extract each turn), `"now"`
   * (the capture waits for the extraction) or `"none"`.
   */
  extract?: Extract;
  /** The episodes' kind (default `message`). */
  kind?: string;
}

/** Recall before each model call, capture after each turn, for one session. */
export class TurnMemory {
  readonly client: Client;
  readonly session: string;
  readonly subjects: string[] | undefined;
  readonly budget: number | undefined;
  readonly extract: Extract;
  readonly kind: string;
  /** The episode ids of the turns captured, in order. */
  readonly captured: string[] = [];

  /** `client` needs a write key: capture writes episodes. */
  constructor(client: Client, options: TurnMemoryOptions) {
    this.client = client;
    this.session = options.session;
    this.subjects = options.subjects;
    this.budget = options.budget;
    this.extract = options.extract ?? "background";
    this.kind = options.kind ?? "message";
  }

  /** What memory holds for `question`: `recall(...).rendered`, to put before the model call. */
  async context(question: string): Promise<string> {
    return (await this.client.recall(question, { session: this.session, budget: this.budget })).rendered;
  }

  /** {@link context} for the conversation's last user message ("" when there is none: nothing to ask). */
  contextMessages(messages: readonly MessageLike[]): Promise<string> {
    const { user } = lastTurn(messages);
    return user ? this.context(user) : Promise.resolve("");
  }

  /** Hand a finished turn to sgam as an episode of the session. */
  async capture(user: string, assistant?: string | null, options: { occurred_at?: Instant } = {}): Promise<EpisodeResponse> {
    const when = formatInstant(options.occurred_at ?? new Date());
    const text = turnText(user, assistant);
    // One key per turn: a retry of this capture is the same episode, and two
    // turns that say the same words are two episodes.
    const key = "turn-sha256:" + (await sha256Hex([this.session, when, text].join("\x00")));
    const ep = await this.client.episodes.add(text, {
      session: this.session, kind: this.kind, occurred_at: when, idempotency_key: key, subjects: this.subjects,
      extract: this.extract,
    });
    if (ep.episode_id) this.captured.push(ep.episode_id);
    return ep;
  }

  /**
   * Capture the last turn of a conversation: its last user message and the
   * answer after it (`[...messages, ...result.response.messages]` after a
   * `generateText`). Null when there is no user message.
   */
  captureMessages(messages: readonly MessageLike[]): Promise<EpisodeResponse | null> {
    const { user, assistant } = lastTurn(messages);
    return user ? this.capture(user, assistant) : Promise.resolve(null);
  }

  /**
   * Wait until a captured episode (default the last) has an extraction
   * record, and return its records ([] when `timeoutMs` passed first). For
   * tests and demos: a live loop need not wait.
   */
  async waitExtracted(episodeId?: string, options: { timeoutMs?: number; pollMs?: number } = {}): Promise<Extraction[]> {
    const id = episodeId ?? this.captured.at(-1);
    if (id === undefined) return [];
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      const records = await this.client.extractions.list(id);
      if (records.length || Date.now() >= deadline) return records;
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 100));
    }
  }

  toString(): string {
    return `TurnMemory(${this.client}, session=${JSON.stringify(this.session)})`;
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}
