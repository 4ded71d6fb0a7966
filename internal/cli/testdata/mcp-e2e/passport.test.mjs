// End-to-end: the official MCP TypeScript SDK drives `sgam mcp` over stdio.
// SGAM_BIN names the sgam binary; each test gets a fresh SQLite file.
// TestMCPTypeScriptSDK (internal/cli/mcp_test.go) runs it under go test; by
// hand: npm ci && SGAM_BIN=/path/to/sgam npm test
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const bin = process.env.SGAM_BIN;
assert.ok(bin, "set SGAM_BIN to the sgam binary");

async function connect(db, tenant) {
  const transport = new StdioClientTransport({
    command: bin,
    args: ["mcp", "--db", db, "--tenant", tenant],
    stderr: "inherit",
  });
  const client = new Client({ name: "sgam-e2e", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

async function call(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.ok(!res.isError, `${name} failed: ${JSON.stringify(res.content)}`);
  assert.ok(res.structuredContent, `${name} returned no structured content`);
  return res.structuredContent;
}

test("passport story over stdio", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "sgam-mcp-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, "sgam.db");
  const client = await connect(db, "acme");
  t.after(() => client.close());

  const { tools } = await client.listTools();
  const names = tools.map((x) => x.name).sort();
  assert.deepEqual(names, ["forget_value", "history", "observe", "recall", "remember", "trace"]);
  for (const tool of tools) {
    assert.ok(tool.description.length > 40, `${tool.name} has a real description`);
    assert.equal(tool.inputSchema.type, "object");
    assert.ok(!("tenant" in (tool.inputSchema.properties ?? {})), `${tool.name} takes no tenant`);
  }

  const first = await call(client, "remember", {
    subject: "mira", attribute: "passport_deadline", value: "2026-07-15",
    valid_from: "2026-06-01T09:00:00Z", quote: "Mira: my passport deadline is July 15.", session: "chat-1",
  });
  const second = await call(client, "remember", {
    subject: "mira", attribute: "passport_deadline", value: "2026-06-30",
    valid_from: "2026-06-03T10:00:00Z", quote: "Mira: sorry, it is June 30.", session: "chat-1",
  });
  assert.notEqual(first.episode_id, second.episode_id);

  const now = await call(client, "recall", { subject: "mira", attribute: "passport_deadline" });
  assert.equal(now.facts.length, 1);
  assert.equal(now.facts[0].value, "2026-06-30");
  assert.deepEqual(now.facts[0].sources, [second.episode_id]);
  assert.equal(now.facts[0].quote, "Mira: sorry, it is June 30.");
  assert.equal(now.facts[0].status, "current");

  // A question: its subject, attribute and instant are found in it; the
  // text content is the prompt-ready block.
  const asked = await client.callTool({ name: "recall", arguments: { question: "What was Mira's passport deadline on June 2, 2026?" } });
  assert.ok(!asked.isError);
  assert.match(asked.content[0].text, /- mira passport_deadline = "2026-07-15"/);
  assert.equal(asked.structuredContent.as_of, "2026-06-02T23:59:59.999999Z");
  assert.equal(asked.structuredContent.rendered, asked.content[0].text);

  const then = await call(client, "recall", { subject: "mira", as_of: "2026-06-02" });
  assert.equal(then.as_of, "2026-06-02T00:00:00Z");
  assert.equal(then.facts.length, 1);
  assert.equal(then.facts[0].value, "2026-07-15");
  assert.equal(then.facts[0].valid_to, "2026-06-03T10:00:00Z");
  assert.deepEqual(then.facts[0].sources, [first.episode_id]);
  assert.equal(then.facts[0].quote, "Mira: my passport deadline is July 15.");

  const bad = await client.callTool({ name: "recall", arguments: { subject: "mira", as_of: "last week" } });
  assert.ok(bad.isError);
  assert.match(bad.content[0].text, /^invalid: as_of:/);

  const state = await client.readResource({ uri: "sgam://subjects/mira" });
  assert.equal(JSON.parse(state.contents[0].text).facts[0].value, "2026-06-30");

  // Another tenant's server over the same database finds nothing of acme's.
  const globex = await connect(db, "globex");
  t.after(() => globex.close());
  const other = await call(globex, "recall", { subject: "mira" });
  assert.deepEqual(other.facts, []);
  const otherAsked = await call(globex, "recall", { question: "When is Mira's passport deadline?", evidence_limit: 50 });
  assert.deepEqual(otherAsked.facts, []);
  assert.deepEqual(otherAsked.evidence, []);
  const trace = await globex.callTool({ name: "trace", arguments: { fact_id: now.facts[0].fact_id } });
  assert.ok(trace.isError);
  assert.match(trace.content[0].text, /^not_found:/);
});
