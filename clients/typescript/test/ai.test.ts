// remember, recall and forget as Vercel AI SDK tools, driven by the AI SDK's
// own mock model (no network), writing and recalling through the real server.
import { test } from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { generateText, stepCountIs, type StepResult } from "ai";
import { Client, FORGET, MemoryTools, RECALL, REMEMBER, TurnMemory } from "../src/index.js";
import { memoryTools, type MemoryToolSet } from "../src/ai.js";
import { client, env, keys, needsServer, uid } from "./helpers.js";
import { answer, promptTexts, scripted, toolCall } from "./mockmodel.js";

/** Each tool call's output (or error), by call id, over every step. */
function outputs(steps: StepResult<MemoryToolSet>[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const step of steps) {
    for (const part of step.content) {
      if (part.type === "tool-result") out[part.toolCallId] = String(part.output);
      if (part.type === "tool-error") out[part.toolCallId] = `tool-error: ${String(part.error)}`;
    }
  }
  return out;
}

test("three tools, every argument a required string, none a tenant", () => {
  const tools = memoryTools(new Client({ baseUrl: "http://127.0.0.1:1", apiKey: "" }));
  assert.deepEqual(Object.keys(tools), ["remember", "recall", "forget"]);
  assert.deepEqual([tools.remember.description, tools.recall.description, tools.forget.description], [REMEMBER, RECALL, FORGET]);
  const schemas = Object.values(tools).map((t) => (t.inputSchema as { jsonSchema: any }).jsonSchema);
  assert.deepEqual(schemas.map((s) => Object.keys(s.properties)), [
    ["subject", "attribute", "value", "quote"], ["question"], ["subject", "attribute", "quote"],
  ]);
  for (const s of schemas) {
    assert.deepEqual(s.required, Object.keys(s.properties));
    assert.equal(s.additionalProperties, false);
    assert.ok(Object.values<any>(s.properties).every((p) => p.type === "string" && p.description));
    assert.ok(!("tenant" in s.properties), "the tenant is the key's, never an argument");
  }
});

test("a mock model remembers, recalls and forgets through the real server", needsServer, async () => {
  const alpha = client("SGAM_ALPHA_WRITE_KEY");
  const u = uid();
  const subject = `ada-${u}`;
  const question = `What is ${subject}'s favorite color?`;
  const model = scripted(
    toolCall("c1", "remember", { subject, attribute: "favorite_color", value: '"teal"', quote: `${subject} said: my favorite color is teal` }),
    toolCall("c2", "recall", { question }),
    toolCall("c3", "forget", { subject, attribute: "favorite_color", quote: "actually, forget my color" }),
    toolCall("c4", "recall", { question }),
    answer("Done."),
  );
  const result = await generateText({
    model, tools: memoryTools(alpha, { session: u }), stopWhen: stepCountIs(10), prompt: "My favorite color is teal.",
  });
  assert.equal(result.text, "Done.");
  const out = outputs(result.steps);
  assert.ok(out.c1!.startsWith(`remembered: ${subject} favorite_color = "teal" from `), out.c1);
  assert.ok(out.c2!.includes(`${subject} favorite_color = "teal"`), out.c2);
  assert.ok(out.c3!.startsWith(`forgot: ${subject} favorite_color = no value from `), out.c3);
  assert.ok(!out.c4!.split("Evidence")[0]!.includes('favorite_color = "teal"'), out.c4);
  // What recall answered is what the model was given at its next call.
  assert.ok(promptTexts(model, 2).includes(out.c2!));

  // Written through the real server, under the key's tenant, citing the quote.
  const rows = (await alpha.subjects.history(subject, "favorite_color")).filter((f) => !f.retracted_at);
  assert.deepEqual(rows.map((f) => f.value), ["teal", null]);
  const episode = await alpha.episodes.get(rows[0]!.sources![0]!);
  assert.equal(episode.content, `${subject} said: my favorite color is teal`);
  assert.equal(episode.session, u);
  assert.equal(episode.kind, "message");
});

test("the tools of a second tenant's key see nothing of the first's", needsServer, async () => {
  const alphaClient = client("SGAM_ALPHA_WRITE_KEY");
  const alpha = new MemoryTools(alphaClient);
  const subject = `rune-${uid()}`;
  const question = `What is ${subject}'s favorite color?`;
  assert.match(await alpha.remember({ subject, attribute: "favorite_color", value: '"amber"', quote: "amber" }), /^remembered: /);
  assert.ok((await alpha.recall({ question })).includes('"amber"'));

  const model = scripted(
    toolCall("b1", "recall", { question }),
    toolCall("b2", "forget", { subject, attribute: "favorite_color", quote: "forget it" }),
    answer("Nothing."),
  );
  const result = await generateText({
    model, tools: memoryTools(client("SGAM_BETA_WRITE_KEY")), stopWhen: stepCountIs(5), prompt: "What do you know?",
  });
  const out = outputs(result.steps);
  assert.ok(!out.b1!.includes("amber"), out.b1);
  assert.match(out.b2!, /^forgot: /);
  // beta's retraction is beta's: alpha's value stands.
  assert.equal((await alphaClient.subjects.get(subject, "favorite_color")).fact?.value, "amber");
});

test("an error is the tool's answer, and never holds the key", needsServer, async () => {
  const bogus = "sgam_bogus0000000_notakeynotakeynotakey";
  const u = uid();
  const model = scripted(
    toolCall("r1", "remember", { subject: u, attribute: "x", value: "1", quote: "q" }),
    toolCall("r2", "recall", { question: "anything?" }),
    toolCall("r3", "remember", { subject: u, attribute: "x", value: "1" }),
    toolCall("r4", "remember", { subject: u, attribute: "Not An Identifier", value: "1", quote: "q" }),
    answer("Sorry."),
  );
  const readOnly = await generateText({
    model, tools: memoryTools(client("SGAM_ALPHA_READ_KEY")), stopWhen: stepCountIs(10), prompt: "Remember x.",
  });
  const out = outputs(readOnly.steps);
  assert.match(out.r1!, /^error: forbidden: .*\[403, POST \/v1\/episodes, request /);
  assert.match(out.r2!, /^Question: anything\?/, "a read key recalls");
  // An input the schema refuses never reaches the server: the AI SDK hands the model the error.
  assert.match(out.r3!, /^tool-error: [^]*\bquote: a string is required/);
  assert.match(out.r4!, /^error: forbidden: /);

  const unknownKey = await generateText({
    model: scripted(toolCall("k1", "recall", { question: "anything?" }), answer("Sorry.")),
    tools: memoryTools(new Client({ baseUrl: env().SGAM_URL, apiKey: bogus })),
    stopWhen: stepCountIs(5),
    prompt: "Recall.",
  });
  const k1 = outputs(unknownKey.steps).k1!;
  assert.match(k1, /^error: unauthenticated: /);

  const writer = await generateText({
    model: scripted(toolCall("w1", "remember", { subject: u, attribute: "Not An Identifier", value: "1", quote: "q" }), answer("Sorry.")),
    tools: memoryTools(client("SGAM_ALPHA_WRITE_KEY")),
    stopWhen: stepCountIs(5),
    prompt: "Remember.",
  });
  const w1 = outputs(writer.steps).w1!;
  assert.match(w1, /^error: invalid: attribute: /);

  const shown = [JSON.stringify([readOnly.steps, unknownKey.steps, writer.steps]), k1, w1, ...Object.values(out)].join("\n");
  for (const key of [...keys(), bogus]) assert.ok(!shown.includes(key), "a key in a tool's answer");
});

test("remember takes JSON text, or plain words as a string", needsServer, async () => {
  const c = client("SGAM_ALPHA_WRITE_KEY");
  const tools = new MemoryTools(c);
  const u = uid();
  assert.match(await tools.remember({ subject: u, attribute: "n", value: "42", quote: `it is 42 (${u})` }), /= 42 from /);
  assert.match(await tools.remember({ subject: u, attribute: "address", value: '{"city": "Oslo"}', quote: "I live in Oslo" }),
    /= \{"city":"Oslo"\} from /);
  assert.match(await tools.remember({ subject: u, attribute: "note", value: "plain words", quote: "plain words" }), /= "plain words" from /);
  assert.match(await tools.remember({ subject: u, attribute: "price", value: "61.50", quote: "61.50" }), /= 61\.50 from /);
  assert.equal((await c.subjects.get(u, "n")).fact?.value, 42);
  // The same call again (a retry) cites the same episode.
  assert.match(await tools.remember({ subject: u, attribute: "n", value: "42", quote: `it is 42 (${u})` }), /^remembered: /);
  assert.equal((await c.episodes.list({ limit: 50 })).filter((e) => e.content === `it is 42 (${u})`).length, 1);
});

test("the tools and the capture helper never show the key", () => {
  const secret = "sgam_secretid_secretsecretsecret";
  const c = new Client({ baseUrl: "http://127.0.0.1:1", apiKey: secret });
  const shown = [new MemoryTools(c, { session: "s" }), new TurnMemory(c, { session: "s" }), memoryTools(c)]
    .flatMap((x) => [String(x), inspect(x, { showHidden: true, depth: 10 }), JSON.stringify(x) ?? ""]);
  for (const s of shown) assert.ok(!s.includes(secret), s);
  assert.match(String(new TurnMemory(c, { session: "s" })), /apiKey=<set>/);
});
