// Path ids "." and "..": fetch cannot send them (the WHATWG URL parser removes
// a dot segment, even escaped as %2E), so the client refuses them, naming the
// field as the server's own error would. node:http, which sends a path as
// given, shows what the server does with them.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Invalid, SgamError } from "../src/index.js";
import { client, env, needsServer, t, uid } from "./helpers.js";

/** One request with the path exactly as written. */
function raw(method: string, path: string, key: string, body?: string): Promise<{ status: number; json: any }> {
  const url = new URL(env().SGAM_URL);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method, path, headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, json: text ? JSON.parse(text) : null }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function refused(p: Promise<unknown>): Promise<Invalid> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof Invalid, String(e));
    assert.equal((e as SgamError).status, null, "refused before any request");
    return e;
  }
  assert.fail("not refused");
}

test("fetch's URL parser removes a dot segment, even escaped", () => {
  const path = (seg: string) => new URL(`http://h/v1/subjects/${seg}/attributes/x`).pathname;
  for (const seg of [".", "%2E", "%2e"]) assert.equal(path(seg), "/v1/subjects/attributes/x");
  for (const seg of ["..", "%2E%2E", ".%2e"]) assert.equal(path(seg), "/v1/attributes/x");
});

test("a dot id is refused, naming the field as the server does", needsServer, async () => {
  const key = env().SGAM_ALPHA_ADMIN_KEY!;
  const c = client("SGAM_ALPHA_ADMIN_KEY");
  const cases: [string, () => Promise<unknown>, string, string][] = [
    ["attribute", () => c.subjects.get("x", "."), "GET", "/v1/subjects/x/attributes/%2E"],
    ["episode_id", () => c.episodes.get(".."), "GET", "/v1/episodes/%2E%2E"],
    ["episode_id", () => c.extractions.list("."), "GET", "/v1/episodes/%2E/extractions"],
    ["fact_id", () => c.call({ method: "GET", route: "/v1/facts/{id}/trace", pathParams: { id: "." } }), "GET", "/v1/facts/%2E/trace"],
    ["pending_id", () => c.pending.dismiss("."), "POST", "/v1/pending/%2E/dismiss"],
  ];
  for (const [field, call, method, path] of cases) {
    const e = await refused(call());
    assert.equal(e.field, field);
    assert.match(e.message, /cannot be sent as a URL path segment by fetch/);
    const server = await raw(method, path, key, method === "POST" ? "{}" : undefined);
    assert.ok(server.status >= 400, `${path}: ${server.status}`);
    assert.equal(server.json.error.field, field, path);
  }
  assert.equal((await refused(c.episodes.get(""))).field, "episode_id");
});

test("a subject '.' or '..' is refused by the server too: no subject exists that fetch cannot read", needsServer, async () => {
  const key = env().SGAM_ALPHA_ADMIN_KEY!;
  const c = client("SGAM_ALPHA_ADMIN_KEY");
  const attribute = `note-${uid()}`;
  for (const [dots, escaped] of [[".", "%2E"], ["..", "%2E%2E"]] as const) {
    // Not even through a body, where it would be plain JSON...
    await assert.rejects(c.facts.assert(dots, attribute, dots, { source: "e1", valid_from: t(1) }),
      (e: unknown) => e instanceof Invalid && e.status === 400 && e.field === "subject");
    // ...nor from %2E in a path...
    const server = await raw("GET", `/v1/subjects/${escaped}/attributes/${attribute}`, key);
    assert.equal(server.status, 400);
    assert.equal(server.json.error.field, "subject");
    // ...which fetch cannot send anyway: refused before any request.
    assert.equal((await refused(c.subjects.get(dots, attribute))).field, "subject");
    assert.equal((await refused(c.subjects.state(dots))).field, "subject");
  }
});
