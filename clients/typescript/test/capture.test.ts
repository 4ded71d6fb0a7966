// Capture in a loop (TurnMemory) and its AI SDK example, against the real
// server, whose scripted model extracts "Name's attribute is value." sentences.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { generateText, type ModelMessage } from "ai";
import { TurnMemory, lastTurn, messageText, turnText } from "../src/index.js";
import { REPO, client, env, keys, needsServer, uid } from "./helpers.js";
import { answer, promptTexts, scripted } from "./mockmodel.js";

test("a turn's text, and the last turn of AI SDK messages", () => {
  assert.equal(turnText(" hi ", "hello"), "User: hi\nAssistant: hello");
  assert.equal(turnText("hi"), "User: hi");
  const messages: ModelMessage[] = [
    { role: "system", content: "memory" },
    { role: "user", content: "first" },
    { role: "assistant", content: "one" },
    { role: "user", content: [{ type: "text", text: "second" }, { type: "image", image: new URL("http://x/y.png") }] },
    { role: "assistant", content: [{ type: "reasoning", text: "thinking" }, { type: "tool-call", toolCallId: "c", toolName: "recall", input: {} }] },
    { role: "tool", content: [{ type: "tool-result", toolCallId: "c", toolName: "recall", output: { type: "text", value: "tool says" } }] },
    { role: "assistant", content: [{ type: "text", text: "two" }] },
    { role: "assistant", content: [] },
  ];
  assert.deepEqual(lastTurn(messages), { user: "second", assistant: "two" });
  assert.deepEqual(lastTurn([{ role: "user", content: "q" }]), { user: "q", assistant: null });
  assert.deepEqual(lastTurn([]), { user: "", assistant: null });
  // A UIMessage (useChat's) holds its text in parts.
  assert.equal(messageText({ role: "user", parts: [{ type: "step-start" }, { type: "text", text: "from the UI" }] }), "from the UI");
});

test("capture a turn, then the next turn's context has what it said", needsServer, async () => {
  const u = uid();
  const name = `Kora${u}`;
  const turns = new TurnMemory(client("SGAM_ALPHA_WRITE_KEY"), { session: u });
  assert.ok(!(await turns.context(`What is ${name}'s favorite tea?`)).includes(`${name.toLowerCase()} favorite_tea`));
  const ep = await turns.capture(`By the way, ${name}'s favorite tea is oolong.`, "Noted!");
  assert.equal(ep.session, u);
  assert.equal(ep.queued, true, "extract: background");
  assert.ok(ep.content.startsWith("User: By the way"));
  const records = await turns.waitExtracted();
  assert.equal(records[0]?.status, "done");
  assert.ok((await turns.context(`What is ${name}'s favorite tea?`)).includes(`${name.toLowerCase()} favorite_tea = "oolong"`));
  // A retry of one capture (same instant, same words) is the same episode.
  const when = new Date();
  const a = await turns.capture("same words", "same answer", { occurred_at: when });
  const b = await turns.capture("same words", "same answer", { occurred_at: when });
  const c = await turns.capture("same words", "same answer", { occurred_at: new Date(when.getTime() + 1000) });
  assert.equal(a.episode_id, b.episode_id);
  assert.notEqual(a.episode_id, c.episode_id);
});

test("captureMessages takes the last turn; none without a user message", needsServer, async () => {
  const u = uid();
  const turns = new TurnMemory(client("SGAM_ALPHA_WRITE_KEY"), { session: u, extract: "none", subjects: [`s-${u}`] });
  const ep = await turns.captureMessages([{ role: "user", content: "hello" }, { role: "assistant", content: "hi there" }]);
  assert.equal(ep?.content, "User: hello\nAssistant: hi there");
  assert.deepEqual(ep?.subjects, [`s-${u}`]);
  assert.equal(await turns.captureMessages([{ role: "assistant", content: "no user" }]), null);
  assert.equal(await turns.contextMessages([{ role: "assistant", content: "no user" }]), "");
  assert.deepEqual(turns.captured, [ep!.episode_id]);
});

test("with the AI SDK: recall before each model call, capture after each turn", needsServer, async () => {
  const u = uid();
  const name = `Vela${u}`;
  const turns = new TurnMemory(client("SGAM_ALPHA_WRITE_KEY"), { session: u });
  const model = scripted(answer("Noted."), answer("Seven, from memory."));
  const messages: ModelMessage[] = [];
  for (const text of [`${name}'s lucky number is seven.`, `What is ${name}'s lucky number?`]) {
    messages.push({ role: "user", content: text });
    const result = await generateText({ model, system: await turns.contextMessages(messages), messages });
    messages.push(...result.response.messages);
    await turns.captureMessages(messages);
    assert.ok((await turns.waitExtracted()).length, "the turn was extracted");
  }
  const fact = `${name.toLowerCase()} lucky_number = "seven"`;
  assert.ok(!promptTexts(model, 0)[0]!.includes(fact));
  const system = promptTexts(model, 1)[0]!;
  assert.ok(system.startsWith(`Question: What is ${name}'s lucky number?`), system);
  assert.ok(system.includes(fact), system);
  const episodes = await turns.client.episodes.list({ session: u });
  assert.deepEqual(episodes.map((e) => e.content), [
    `User: ${name}'s lucky number is seven.\nAssistant: Noted.`,
    `User: What is ${name}'s lucky number?\nAssistant: Seven, from memory.`,
  ]);
});

test("a second tenant's turns recall nothing of the first's", needsServer, async () => {
  const u = uid();
  const name = `Rune${u}`;
  const turns = new TurnMemory(client("SGAM_ALPHA_WRITE_KEY"), { session: u });
  await turns.capture(`${name}'s pin is secret.`);
  assert.ok((await turns.waitExtracted()).length);
  assert.ok((await turns.context(`What is ${name}'s pin?`)).includes('"secret"'));
  const other = new TurnMemory(client("SGAM_BETA_WRITE_KEY"), { session: u }); // the same session name, another tenant
  const block = await other.context(`What is ${name}'s pin?`);
  assert.ok(!block.includes("secret"), block);
  assert.ok(!block.split("\n").slice(1).join("\n").includes(name), block);
});

const EXAMPLE = path.join(REPO, "examples", "typescript", "ai-sdk-capture-loop");
const exampleInstalled = existsSync(path.join(EXAMPLE, "node_modules", "@sgam", "client"));

test("the AI SDK example runs", {
  skip: needsServer.skip || (exampleInstalled ? false : "the example's packages are not installed (npm ci in its directory; typescript.sh does)"),
}, async () => {
  const key = env().SGAM_ALPHA_WRITE_KEY!;
  const childEnv: NodeJS.ProcessEnv = { ...process.env, SGAM_URL: env().SGAM_URL, SGAM_API_KEY: key };
  delete childEnv.OPENAI_BASE_URL; // the offline stand-in model
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ["main.mjs"], { cwd: EXAMPLE, env: childEnv, timeout: 120_000 });
  assert.ok(stdout.includes(`assistant: From memory: mira's favorite color is "teal"`), stdout + stderr);
  for (const k of keys()) assert.ok(!(stdout + stderr).includes(k), "a key in the example's output");
});
