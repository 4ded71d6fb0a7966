// Every operation of server/openapi.json through the SDK, against the real server.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, NotFound, Invalid, OPERATIONS, stringify } from "../src/index.js";
import { client, delta, documentedOperations, env, needsServer, openapiDoc, recordingFetch, t, uid } from "./helpers.js";

const doc = openapiDoc();

function resolveMethod(c: Client, dotted: string): unknown {
  let obj: any = c;
  let owner: any = c;
  for (const part of dotted.split(".")) {
    owner = obj;
    obj = obj?.[part];
  }
  return typeof obj === "function" ? obj.bind(owner) : undefined;
}

/** The route pattern a concrete path matches ("/v1/episodes/x" -> "/v1/episodes/{id}"). */
function routeOf(opLine: string): string | null {
  const [method, p] = opLine.split(" ");
  for (const op of documentedOperations(doc)) {
    const [m, route] = op.split(" ");
    if (m !== method) continue;
    const re = new RegExp("^" + route!.replace(/[.]/g, "\\.").replace(/\{[^}]+\}/g, "[^/]+") + "$");
    if (re.test(p!)) return op;
  }
  return null;
}

test("every documented operation has a method, and every method a documented operation", () => {
  const documented = documentedOperations(doc);
  const table = new Set(Object.keys(OPERATIONS));
  assert.deepEqual([...documented].filter((o) => !table.has(o)).sort(), [], "no SDK method for these");
  assert.deepEqual([...table].filter((o) => !documented.has(o)).sort(), [], "SDK methods for no documented operation");
  const c = new Client({ baseUrl: "http://127.0.0.1:1", apiKey: "" });
  for (const [op, dotted] of Object.entries(OPERATIONS)) {
    assert.equal(typeof resolveMethod(c, dotted), "function", `${op}: no method ${dotted}`);
  }
});

test("the server serves the document the SDK was checked against", needsServer, async () => {
  const c = client("SGAM_ALPHA_ADMIN_KEY");
  assert.equal(stringify(await c.openapi()), stringify(doc));
});

test("every operation, against the real server", needsServer, async () => {
  await delta();
  const sent: string[] = [];
  const c = new Client({ baseUrl: env().SGAM_URL, apiKey: env().SGAM_DELTA_ADMIN_KEY, fetch: recordingFetch(sent) });
  const u = uid();
  const cust = `cust-${u}`;
  const acct = `acct-${u}`;

  assert.equal((await c.health()).ok, true);
  assert.equal((await c.ready()).ok, true);
  assert.match(String((await c.openapi()).openapi), /^3\.1/);
  assert.match(await c.metrics(), /sgam_http_requests_total/);

  const schema = await c.schema.get();
  assert.equal(schema.tenant, "delta");
  assert.ok(schema.version >= 1 && !schema.store_default);
  const dry = await c.schema.apply({ attributes: { plan: { memory: "account", type: { enum: ["free", "pro", "max"] } } } }, { dry_run: true });
  assert.ok(dry.diff && dry.diff.length > 0, "a dry run shows the diff");
  assert.equal((await c.schema.get()).version, schema.version, "a dry run applies nothing");

  const ep = await c.episodes.add("Mira Chen called about her plan.", {
    episode_id: `${u}-e1`, session: u, occurred_at: t(1), extract: "none", metadata: { channel: "phone" }, subjects: [cust],
  });
  assert.equal(ep.episode_id, `${u}-e1`);
  assert.equal(ep.queued ?? false, false);
  const got = await c.episodes.get(`${u}-e1`);
  assert.equal(got.content, "Mira Chen called about her plan.");
  assert.deepEqual(got.metadata, { channel: "phone" });
  assert.deepEqual((await c.episodes.list({ session: u, limit: 10 })).map((e) => e.episode_id), [`${u}-e1`]);
  assert.deepEqual(await c.extractions.list(`${u}-e1`), []);

  const first = await c.facts.assert(cust, "full_name", "Mira Chen", { source: `${u}-e1`, valid_from: t(1) });
  const second = await c.facts.assert(cust, "full_name", "Mira Lind", { source: `${u}-e2`, valid_from: t(3) });
  assert.ok(first.fact && second.fact);
  assert.equal(second.fact.value, "Mira Lind");
  assert.equal((await c.subjects.get(cust, "full_name", { as_of: t(2) })).fact?.value, "Mira Chen");
  assert.equal((await c.subjects.get(cust, "full_name")).fact?.value, "Mira Lind");
  const trace = await c.facts.trace(second.fact.fact_id);
  assert.equal(trace.chain[0]!.fact_id, second.fact.fact_id);
  assert.ok(trace.episodes.some((e) => e.episode_id === `${u}-e2`), JSON.stringify(trace.episodes));
  const retracted = await c.facts.retract(cust, "full_name", { source: `${u}-e3`, at: t(5) });
  assert.ok(retracted.fact?.tombstone);
  const history = await c.subjects.history(cust, "full_name");
  assert.deepEqual(history.filter((f) => f.retracted_at == null).map((f) => f.value), ["Mira Chen", "Mira Lind", null]);
  assert.deepEqual((await c.subjects.state(cust, { as_of: t(4) })).map((f) => f.attribute), ["full_name"]);

  await c.sets.add(cust, "tags", "vip", { source: `${u}-e1`, valid_from: t(1) });
  await c.sets.add(cust, "tags", "early", { source: `${u}-e1`, valid_from: t(1) });
  const removed = await c.sets.remove(cust, "tags", "vip", { source: `${u}-e3`, at: t(4) });
  assert.equal(removed.fact?.member, "vip");
  const members = (await c.subjects.get(cust, "tags", { as_of: t(2) })).facts ?? [];
  assert.deepEqual(members.map((f) => f.member).sort(), ["early", "vip"]);
  assert.deepEqual(((await c.subjects.get(cust, "tags")).facts ?? []).map((f) => f.member), ["early"]);

  await c.facts.assert(cust, "account", acct, { source: `${u}-e1`, valid_from: t(1) });
  await c.facts.assert(acct, "plan", "pro", { source: `${u}-e1`, valid_from: t(1) });
  const hops = await c.subjects.traverse(cust, ["account"], { as_of: t(2) });
  assert.deepEqual(hops.map((h) => [h.from, h.attribute, h.to]), [[cust, "account", acct]]);

  const held = await c.facts.assert(cust, "email_opt_in", true, { source: `${u}-e1`, valid_from: t(1) });
  assert.equal(held.fact, null);
  assert.equal(held.pending?.reason, "sensitive");
  assert.deepEqual((await c.pending.list({ subject: cust })).map((p) => p.pending_id), [held.pending!.pending_id]);
  await c.episodes.add("Yes, send me the newsletter.", { episode_id: `${u}-ok`, kind: "user_confirmed", extract: "none" });
  const confirmed = await c.pending.confirm(held.pending!.pending_id, `${u}-ok`);
  assert.equal(confirmed.fact?.value, true);
  const again = await c.facts.assert(cust, "email_opt_in", false, { source: `${u}-e3`, valid_from: t(6) });
  assert.ok(again.pending);
  assert.equal((await c.pending.dismiss(again.pending.pending_id)).ok, true);
  assert.deepEqual(await c.pending.list({ subject: cust }), []);

  const ctx = await c.recall(`What is the plan of ${acct}?`, { subjects: [acct], as_of: t(2), budget: 400, evidence_limit: -1, hops: 1, session: u });
  assert.equal(typeof ctx.rendered, "string");
  assert.equal(`${ctx}`, ctx.rendered);
  assert.ok(ctx.rendered.includes('"pro"'), ctx.rendered);
  assert.deepEqual(ctx.facts.map((f) => f.value), ["pro"]);
  const none = await c.recall(`What is the plan of ${acct}?`, { subjects: [acct], evidence: "none" });
  assert.deepEqual(none.evidence, []);
  assert.equal(ctx.facts[0]!.status, "current");

  const result = await c.replay([
    { op: "assert", subject: `r-${u}`, attribute: "plan", value: "free", valid_from: "2026-06-01T00:00:00Z", source: `${u}-r` },
    { op: "get", subject: `r-${u}`, attribute: "plan" },
    { op: "assert", subject: `r-${u}`, attribute: "plan", value: "gold", valid_from: "2026-06-02T00:00:00Z", source: `${u}-r` },
  ]);
  assert.deepEqual([result.lines, result.failed], [3, 1]);
  assert.equal((result.results[1] as any).fact.value, "free");
  assert.equal((result.results[2] as any).ok, false);

  const answer: any = await c.mcp({ jsonrpc: "2.0", id: 1, method: "tools/list" });
  const tools = new Set(answer.result.tools.map((x: any) => x.name));
  for (const name of ["recall", "history", "trace"]) assert.ok(tools.has(name), name);

  const receipt = await c.forget({ subject: cust });
  assert.ok(receipt.kind && receipt.facts_deleted > 0);
  assert.ok((await c.receipts()).some((r) => r.receipt_id === receipt.receipt_id));
  assert.deepEqual(await c.subjects.history(cust, "full_name"), []);

  const reached = new Set(sent.map(routeOf));
  const missing = [...documentedOperations(doc)].filter((o) => !reached.has(o));
  assert.deepEqual(missing, [], "operations this test did not send");
});

test("extract now returns the record and the facts", needsServer, async () => {
  const c = client("SGAM_ALPHA_ADMIN_KEY");
  const u = uid();
  const name = "Zed" + u;
  const ep = await c.episodes.add(`${name[0]!.toUpperCase() + name.slice(1)}'s favorite color is teal.`, { episode_id: `${u}-x`, extract: "now" });
  assert.equal(ep.extraction?.status, "done", JSON.stringify(ep));
  assert.deepEqual(ep.extraction!.accepted!.map((a) => a.outcome), ["written"]);
  const records = await c.extractions.list(`${u}-x`);
  assert.deepEqual(records.map((r) => r.extraction_id), [ep.extraction!.extraction_id]);
});

test("path ids are escaped", needsServer, async () => {
  const c = client("SGAM_ALPHA_ADMIN_KEY");
  const subject = `a/b c?d#e%f ${uid()} ü`;
  await c.facts.assert(subject, "note", "x", { source: "e1", valid_from: t(1) });
  assert.equal((await c.subjects.get(subject, "note")).fact?.subject, subject);
  assert.deepEqual((await c.subjects.state(subject)).map((f) => f.subject), [subject]);
  await assert.rejects(c.subjects.state(""), (e: any) => e instanceof Invalid && e.field === "subject");
});

test("a second tenant's key sees nothing of the first's", needsServer, async () => {
  const alpha = client("SGAM_ALPHA_ADMIN_KEY");
  const beta = client("SGAM_BETA_ADMIN_KEY");
  const u = uid();
  const ep = await alpha.episodes.add(`Secret${u}'s code is hidden.`, { episode_id: `${u}-s`, session: u, extract: "now" });
  const w = await alpha.facts.assert(u, "code", "hidden", { source: `${u}-s`, valid_from: t(1) });
  await alpha.facts.assert(u, "account", `acct-${u}`, { source: `${u}-s`, valid_from: t(1) });
  assert.ok(w.fact && ep.extraction);
  assert.deepEqual(await beta.subjects.state(u), []);
  assert.equal((await beta.subjects.get(u, "code")).fact ?? null, null);
  assert.deepEqual(await beta.subjects.history(u, "code"), []);
  assert.deepEqual(await beta.subjects.traverse(u, "account"), []);
  await assert.rejects(beta.episodes.get(`${u}-s`), NotFound);
  await assert.rejects(beta.facts.trace(w.fact.fact_id), NotFound);
  await assert.rejects(beta.extractions.list(`${u}-s`), NotFound);
  assert.deepEqual(await beta.episodes.list({ session: u }), []);
  const ctx = await beta.recall(`What is ${u}'s code?`, { subjects: [u] });
  assert.deepEqual(ctx.facts, []);
  assert.ok(!ctx.rendered.includes("hidden"));
  assert.ok((await beta.receipts()).every((r) => r.target !== u));
  assert.equal((await beta.forget({ subject: u })).facts_deleted, 0);
  assert.equal((await alpha.subjects.get(u, "code")).fact?.value, "hidden");
});
