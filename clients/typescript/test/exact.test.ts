// Values stay exact: no JSON number the server returns is rounded through a double.
import { test } from "node:test";
import assert from "node:assert/strict";
import { JsonNumber, parse, stringify, type JsonValue } from "../src/index.js";
import { client, needsServer, t, uid } from "./helpers.js";

// Keys in order: the server stores a value in canonical form, keys sorted.
const TEXT =
  '{"big":12345678901234567890,"e":1e2,"flag":true,"huge":1.7976931348623157e308,' +
  '"list":[1.10,2,{"x":-3.000}],"neg0":-0,"negz":-0.0,"none":null,"price":61.50,"s":"61.50",' +
  '"tiny":0.00000015}';

test("parse and stringify keep the digits", () => {
  const v = parse(TEXT) as Record<string, any>;
  assert.equal(stringify(v), TEXT);
  assert.ok(v.price instanceof JsonNumber);
  assert.equal(v.price.text, "61.50");
  assert.equal(Number(v.price), 61.5);
  assert.ok(v.big instanceof JsonNumber);
  assert.equal(v.big.toBigInt(), 12345678901234567890n);
  assert.equal(v.list[1], 2, "a number JavaScript writes back the same is a plain number");
  assert.equal(String(v.e), "1e2");
  assert.equal(v.s, "61.50");
  assert.deepEqual(parse('{"a":[0.5,-1,1.25,"\\u00fc\\n"]}'), { a: [0.5, -1, 1.25, "ü\n"] });
  assert.deepEqual(parse('{"__proto__":1}'), JSON.parse('{"__proto__":1}'));
  for (const bad of ["", "{", "[1,]", "01", "1.", "tru", '"a', "NaN", "{} x"]) assert.throws(() => parse(bad), SyntaxError, bad);
});

test("stringify of JavaScript values", () => {
  assert.equal(stringify({ f: 0.1, i: 10n ** 30n, j: new JsonNumber("1.10"), t: [1, "a"], u: "ü\n", skip: undefined }),
    '{"f":0.1,"i":1000000000000000000000000000000,"j":1.10,"t":[1,"a"],"u":"ü\\n"}');
  for (const bad of [NaN, Infinity]) assert.throws(() => stringify(bad), RangeError);
  assert.equal(stringify(t(1)), '"2026-06-01T09:00:00Z"');
});

test("a value round-trips through the server exactly", needsServer, async () => {
  const c = client("SGAM_ALPHA_ADMIN_KEY");
  const u = uid();
  const value = parse(TEXT) as JsonValue;
  const w = await c.facts.assert(u, "exact", value, { source: "e1", valid_from: t(1) });
  assert.ok(w.fact);
  assert.equal(stringify(w.fact.value), TEXT);
  assert.equal(stringify((await c.subjects.get(u, "exact")).fact?.value), TEXT);
  assert.equal(stringify((await c.subjects.state(u))[0]!.value), TEXT);
  assert.equal(stringify((await c.subjects.history(u, "exact"))[0]!.value), TEXT);
  assert.equal(stringify((await c.facts.trace(w.fact.fact_id)).chain[0]!.value), TEXT);
  const ctx = await c.recall("exact?", { subjects: [u] });
  assert.equal(stringify(ctx.facts[0]!.value), TEXT);
  // Written again as read: the same value, an idempotent repeat, not a conflict.
  const again = await c.facts.assert(u, "exact", w.fact.value, { source: "e2", valid_from: t(1) });
  assert.equal(again.no_change, true);
});

test("big integers and decimals are sent as written", needsServer, async () => {
  const c = client("SGAM_ALPHA_ADMIN_KEY");
  const w = await c.facts.assert(uid(), "n", [new JsonNumber("0.10"), 2n ** 70n, -(2n ** 70n)], { source: "e1", valid_from: t(1) });
  assert.equal(stringify(w.fact!.value), "[0.10,1180591620717411303424,-1180591620717411303424]");
});
