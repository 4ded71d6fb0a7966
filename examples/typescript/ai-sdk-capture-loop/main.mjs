// @ts-check
/**
 * Capture in a loop with the Vercel AI SDK: memory before every model call,
 * every finished turn handed to sgam.
 *
 *   export SGAM_URL=http://127.0.0.1:7420 SGAM_API_KEY=sgam_...     # a write key
 *   node main.mjs                                                    # an offline stand-in model
 *   OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.1 node main.mjs   # any OpenAI-compatible model
 *
 * Each turn:
 *
 *   recall   the system prompt gets turns.contextMessages(messages), i.e.
 *            recall(user's words).rendered: what memory holds for this turn
 *   model    generateText, with sgam's remember / recall / forget tools too
 *            (a real model may call them; the offline stand-in answers from
 *            the recalled block, so the example needs no API)
 *   capture  turns.captureMessages(messages): the finished turn becomes an
 *            episode of the session, extracted by sgam's workers
 *            (extract: background) while the conversation goes on
 *
 * The sgam server needs a model for extraction (SGAM_LLM_BASE_URL,
 * SGAM_LLM_MODEL). Turn 1 tells a fact; the example waits for the workers to
 * extract it (a real loop does not need to: the next turn comes seconds
 * later); turn 2 asks for it, and the recalled block has it, with the episode
 * it came from.
 */
import { randomUUID } from "node:crypto";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Client, TurnMemory } from "@sgam/client";
import { memoryTools } from "@sgam/client/ai";

const INSTRUCTIONS = "You are a helpful assistant. What memory holds about this conversation follows.";
const FACT_LINE = /^- (\S+) (\S+) = (.+?) \|/gm;

/** Stands in for a chat model: answers with the facts the recalled block (the system prompt) holds. */
function offlineModel() {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const system = prompt.map((m) => (m.role === "system" ? m.content : "")).join("\n");
      const facts = [...system.matchAll(FACT_LINE)].map(([, s, a, v]) => `${s}'s ${a?.replaceAll("_", " ")} is ${v}`);
      const text = facts.length ? `From memory: ${facts.join("; ")}` : "Noted. I do not know anything about that yet.";
      return {
        content: [{ type: "text", text }],
        finishReason: { unified: "stop", raw: "stop" },
        usage: { inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 0, text: 0, reasoning: 0 } },
        warnings: [],
      };
    },
  });
}

/** The model: an OpenAI-compatible server when OPENAI_BASE_URL is set, else the offline stand-in. */
function chooseModel() {
  const baseURL = process.env.OPENAI_BASE_URL;
  if (!baseURL) return offlineModel();
  const provider = createOpenAICompatible({ name: "openai-compatible", baseURL, apiKey: process.env.OPENAI_API_KEY });
  return provider.chatModel(process.env.OPENAI_MODEL ?? "gpt-4o-mini");
}

async function main() {
  const client = new Client(); // $SGAM_URL, $SGAM_API_KEY
  const session = `example-${randomUUID().slice(0, 8)}`;
  const turns = new TurnMemory(client, { session });
  const tools = memoryTools(client, { session });
  const model = chooseModel();
  /** @type {import("ai").ModelMessage[]} */
  const messages = [];

  for (const text of ["Hi! Mira's favorite color is teal.", "What is Mira's favorite color?"]) {
    messages.push({ role: "user", content: text });
    const context = await turns.contextMessages(messages);
    const result = await generateText({ model, system: `${INSTRUCTIONS}\n\n${context}`, messages, tools, stopWhen: stepCountIs(5) });
    messages.push(...result.response.messages);
    await turns.captureMessages(messages);
    console.log(`user:      ${text}`);
    console.log(`assistant: ${result.text}`);
    if (!(await turns.waitExtracted()).length) {
      console.error("the turn was not extracted within 30 s: is a model configured on the sgam server?");
      return 1;
    }
  }
  console.log("\nwhat the last model call was given (recall(...).rendered):");
  console.log(await turns.context("What is Mira's favorite color?"));
  return 0;
}

process.exitCode = await main();
