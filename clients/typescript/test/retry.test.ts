// Retries: 429 and 503 retried with backoff, honouring Retry-After, bounded,
// only for requests safe to repeat. The 429s come from the real server's
// --rate-limit (the twin serve.sh starts at 1 request/s, bursts of 2).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, NO_RETRY, RateLimited, TransportError, Unavailable, type ClientOptions } from "../src/index.js";
import { env, needsServer, uid } from "./helpers.js";

function limited(options: ClientOptions = {}): Client {
  return new Client({ baseUrl: env().SGAM_LIMITED_URL, apiKey: env().SGAM_LIMITED_KEY, ...options });
}

/** Spend the key's tokens: until the server answers 429. */
async function drain(): Promise<void> {
  const c = limited({ retry: NO_RETRY });
  for (let i = 0; i < 20; i++) {
    try {
      await c.subjects.state("drain");
    } catch (e) {
      if (e instanceof RateLimited) return;
      throw e;
    }
  }
  assert.fail("the rate-limited server never answered 429");
}

/** Stands in for the timer: notes each wait, waits it, then maybe more. */
function sleeps(then?: () => Promise<void>): { waits: number[]; sleep: (s: number) => Promise<void> } {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (s) => {
      waits.push(s);
      await new Promise((r) => setTimeout(r, s * 1000));
      if (then) await then();
    },
  };
}

function counting(seen: string[]): typeof fetch {
  return (input, init) => {
    seen.push(String(input));
    return fetch(input, init);
  };
}

test("a 429 is retried after the server's Retry-After", needsServer, async () => {
  const { waits, sleep } = sleeps();
  const retried: string[] = [];
  const c = limited({ retry: { maxRetries: 3 }, sleep, onRetry: (i) => retried.push(`${i.operation} ${i.error.status}`) });
  await drain();
  assert.deepEqual(await c.subjects.state(uid()), []);
  assert.ok(waits.length > 0 && waits[0]! >= 1, "waited the Retry-After (1 s) the server sent");
  assert.ok(retried.includes("GET /v1/subjects/{subject} 429"));
});

test("a 429 retried, then surfaced with retryAfter", needsServer, async () => {
  const attempts: string[] = [];
  // Each wait ends with the key's tokens spent again, so every retry meets a 429.
  const { waits, sleep } = sleeps(drain);
  const c = limited({ retry: { maxRetries: 2 }, sleep, fetch: counting(attempts) });
  await drain();
  const err = await c.subjects.history(uid(), "x").then(() => null, (e) => e);
  assert.ok(err instanceof RateLimited, String(err));
  assert.deepEqual([err.code, err.status, err.field], ["unavailable", 429, "authorization"]);
  assert.equal(err.retryAfter, 1);
  assert.equal(attempts.length, 3, "the first try and two retries");
  assert.equal(waits.length, 2);
  assert.ok(waits.every((w) => w >= 1));
});

test("writes not safe to repeat are not retried", needsServer, async () => {
  const { waits, sleep } = sleeps();
  const c = limited({ retry: { maxRetries: 3 }, sleep });
  const u = uid();
  await drain();
  await assert.rejects(c.episodes.add("an episode without an id or an idempotency key", { extract: "none" }), RateLimited);
  await drain();
  await assert.rejects(c.pending.confirm(`p_${u}`, `${u}-e`), RateLimited);
  await drain();
  await assert.rejects(c.pending.dismiss(`p_${u}`), RateLimited);
  assert.deepEqual(waits, []);
});

test("an episode with an idempotency key, and a fact write, are retried", needsServer, async () => {
  const { waits, sleep } = sleeps();
  const c = limited({ retry: { maxRetries: 3 }, sleep });
  const u = uid();
  await drain();
  const ep = await c.episodes.add("retried safely", { idempotency_key: `${u}-k`, extract: "none" });
  assert.equal(ep.idempotency_key, `${u}-k`);
  assert.ok(waits.length > 0);
  waits.length = 0;
  await drain();
  const again = await c.facts.assert(u, "note", "x", { source: ep.episode_id, valid_from: "2026-06-01T00:00:00Z" });
  assert.ok(again.fact);
  assert.ok(waits.length > 0);
});

test("a Retry-After beyond the bound is not waited for", needsServer, async () => {
  const { waits, sleep } = sleeps();
  const c = limited({ retry: { maxRetries: 3, maxRetryAfter: 0.5 }, sleep });
  await drain();
  const err = await c.subjects.state(uid()).then(() => null, (e) => e);
  assert.ok(err instanceof RateLimited);
  assert.equal(err.retryAfter, 1);
  assert.deepEqual(waits, []);
});

const UNAVAILABLE = JSON.stringify({ error: { code: "unavailable", message: "the store is busy" } });

function canned(...answers: (() => Response | Promise<Response>)[]): { fetch: typeof fetch; seen: number } & { count(): number } {
  let n = 0;
  return {
    seen: 0,
    count: () => n,
    fetch: async () => {
      n++;
      const a = answers.shift();
      if (!a) throw new Error("no more answers");
      return a();
    },
  };
}

test("503: backoff without Retry-After, an HTTP date, then success", async () => {
  const date = "Wed, 21 Oct 2015 07:28:00 GMT"; // in the past: wait 0
  const a = canned(
    () => new Response(UNAVAILABLE, { status: 503 }),
    () => new Response(UNAVAILABLE, { status: 503, headers: { "Retry-After": date } }),
    () => new Response('{"ok":true}', { status: 200 }),
  );
  const waits: number[] = [];
  const c = new Client({ baseUrl: "http://sgam.test", apiKey: "k", fetch: a.fetch, retry: { backoff: 0.2 }, sleep: async (s) => void waits.push(s) });
  assert.equal((await c.ready()).ok, true);
  assert.equal(a.count(), 3);
  assert.ok(waits[0]! >= 0.1 && waits[0]! <= 0.2, String(waits));
  assert.equal(waits[1], 0);
});

test("503: the retries are bounded", async () => {
  const a = canned(...Array.from({ length: 4 }, () => () => new Response(UNAVAILABLE, { status: 503, headers: { "Retry-After": "0" } })));
  const c = new Client({ baseUrl: "http://sgam.test", apiKey: "k", fetch: a.fetch, retry: { maxRetries: 3 }, sleep: async () => {} });
  const err = await c.subjects.state("s").then(() => null, (e) => e);
  assert.ok(err instanceof Unavailable && !(err instanceof RateLimited));
  assert.equal(err.status, 503);
  assert.equal(err.retryAfter, 0);
  assert.equal(a.count(), 4);
});

test("transport failures are retried only when safe", async () => {
  const refused = () => {
    throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } } as any);
  };
  let a = canned(refused, () => new Response('{"facts":[]}'));
  let c = new Client({ baseUrl: "http://sgam.test", apiKey: "k", fetch: a.fetch, sleep: async () => {} });
  assert.deepEqual(await c.subjects.state("s"), []);
  assert.equal(a.count(), 2);
  a = canned(refused, () => new Response("{}"));
  c = new Client({ baseUrl: "http://sgam.test", apiKey: "k", fetch: a.fetch, sleep: async () => {} });
  await assert.rejects(c.forget({ subject: "s" }), TransportError);
  assert.equal(a.count(), 1);
});
