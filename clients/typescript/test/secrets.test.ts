// The key is never shown: not in the client's toString, inspect or JSON, not
// in an error's message, inspect output, stack or JSON.
import { test } from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { readFileSync } from "node:fs";
import { Client, NO_RETRY, SgamError } from "../src/index.js";
import { env, keys, needsServer, uid } from "./helpers.js";

const SECRET = "sgam_secretid_secretsecretsecret";

function shown(x: unknown): string[] {
  return [String(x), inspect(x, { showHidden: true, depth: 10 }), JSON.stringify(x) ?? "", (x as Error)?.stack ?? ""];
}

test("the client's string, inspect and JSON forms hide the key", () => {
  const saved = { url: process.env.SGAM_URL, key: process.env.SGAM_API_KEY };
  process.env.SGAM_URL = "http://sgam.test:1234/";
  process.env.SGAM_API_KEY = SECRET;
  try {
    const c = new Client();
    assert.equal(c.baseUrl, "http://sgam.test:1234");
    assert.equal(c.hasApiKey, true);
    for (const s of [...shown(c), inspect(c.facts), inspect({ c }), JSON.stringify({ c })]) assert.ok(!s.includes(SECRET), s);
    assert.match(String(c), /apiKey=<set>/);
    assert.ok(!Object.values(c).some((v) => v === SECRET));
  } finally {
    if (saved.url === undefined) delete process.env.SGAM_URL;
    else process.env.SGAM_URL = saved.url;
    if (saved.key === undefined) delete process.env.SGAM_API_KEY;
    else process.env.SGAM_API_KEY = saved.key;
  }
  const d = new Client({ baseUrl: "http://x", apiKey: "" });
  assert.equal(d.hasApiKey, false);
});

test("the default URL, and the key sent as a bearer token", async () => {
  const saved = process.env.SGAM_URL;
  delete process.env.SGAM_URL;
  const auth: (string | null)[] = [];
  const urls: string[] = [];
  const c = new Client({
    apiKey: SECRET,
    fetch: async (input, init) => {
      urls.push(String(input));
      auth.push(new Headers(init?.headers).get("authorization"));
      return new Response('{"ok":true,"version":"x"}');
    },
  });
  if (saved !== undefined) process.env.SGAM_URL = saved;
  await c.health();
  assert.deepEqual(urls, ["http://127.0.0.1:7420/healthz"]);
  assert.deepEqual(auth, [`Bearer ${SECRET}`]);
});

test("errors hold no key, whatever fails", needsServer, async () => {
  const all = [...keys(), SECRET];
  const u = uid();
  const errors: SgamError[] = [];
  for (const key of [env().SGAM_ALPHA_READ_KEY!, env().SGAM_ALPHA_ADMIN_KEY!, SECRET]) {
    const c = new Client({ baseUrl: env().SGAM_URL, apiKey: key, retry: NO_RETRY });
    for (const call of [
      () => c.facts.assert(u, "x", 1, { source: "e" }),
      () => c.facts.assert(u, "x", 1, { source: "e", valid_from: "nope" }),
      () => c.episodes.get(`${u}-none`),
      () => c.call({ method: "GET", route: "/v1/nope" }),
    ]) {
      try {
        await call();
      } catch (e) {
        assert.ok(e instanceof SgamError);
        errors.push(e);
      }
    }
  }
  const down = new Client({ baseUrl: "http://127.0.0.1:1", apiKey: SECRET, retry: NO_RETRY });
  await down.health().catch((e) => errors.push(e));
  assert.ok(errors.length >= 9, String(errors.length));
  for (const e of errors) {
    for (const s of shown(e)) for (const k of all) assert.ok(!s.includes(k), `a key in ${s}`);
  }
});

test("the servers' logs hold no key", needsServer, () => {
  const logs = (env().SGAM_SERVE_LOGS ?? "").split(":").filter(Boolean);
  assert.ok(logs.length > 0);
  for (const file of logs) {
    const text = readFileSync(file, "utf8");
    assert.ok(text.length > 0, file);
    for (const k of keys()) assert.ok(!text.includes(k), `a key in ${file}`);
  }
});
