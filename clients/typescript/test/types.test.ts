// The types and the document agree: every schema of server/openapi.json has
// an entry in SCHEMA_PROPERTIES with exactly its property names (and the
// compiler checks each interface against that entry: src/types.ts), and every
// enum the types spell out has the document's values.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SCHEMA_ENUMS, SCHEMA_PROPERTIES, SCHEMA_REQUIRED } from "../src/index.js";
import { openapiDoc } from "./helpers.js";

const doc = openapiDoc();
const schemas = doc.components.schemas as Record<string, any>;

function resolve(s: any): any {
  if (s && s.$ref) return resolve(schemas[s.$ref.split("/").pop()]);
  return s;
}

/** A schema's properties, the parts of an allOf merged. */
function properties(s: any): Record<string, any> {
  s = resolve(s);
  if (s.allOf) return Object.assign({}, ...s.allOf.map(properties));
  return s.properties ?? {};
}

/** The schema a name of SCHEMA_PROPERTIES names: "Extraction.accepted[]", "RecallContext.instants". */
function at(name: string): any {
  const [head, ...rest] = name.split(".");
  let s = resolve(schemas[head!]);
  assert.ok(s, `no schema ${head} in the document`);
  for (const part of rest) {
    const array = part.endsWith("[]");
    s = resolve(properties(s)[array ? part.slice(0, -2) : part]);
    assert.ok(s, `no property ${part} in ${name}`);
    if (array) s = resolve(s.items);
  }
  return s;
}

test("every schema of the document has its property names in SCHEMA_PROPERTIES", () => {
  for (const name of Object.keys(schemas)) {
    assert.ok(Object.hasOwn(SCHEMA_PROPERTIES, name), `no type for the document's schema ${name}`);
  }
});

test("each SCHEMA_PROPERTIES entry has exactly the document's properties", () => {
  for (const [name, names] of Object.entries(SCHEMA_PROPERTIES)) {
    const documented = Object.keys(properties(at(name))).sort();
    assert.deepEqual([...names].sort(), documented, `${name}: the type's properties differ from the document's`);
  }
});

test("every nested object type of the document is checked too", () => {
  // An inline object (or array of objects) inside a schema needs its own entry.
  const missing: string[] = [];
  const walk = (name: string) => {
    for (const [p, raw] of Object.entries(properties(at(name)))) {
      if (raw.$ref) continue;
      const s = raw.type === "array" ? raw.items : raw;
      if (!s || s.$ref || !s.properties) continue;
      const child = raw.type === "array" ? `${name}.${p}[]` : `${name}.${p}`;
      if (!Object.hasOwn(SCHEMA_PROPERTIES, child)) missing.push(child);
      else walk(child);
    }
  };
  for (const name of Object.keys(schemas)) walk(name);
  assert.deepEqual(missing, []);
});

test("each enum of the types has the document's values", () => {
  for (const [name, values] of Object.entries(SCHEMA_ENUMS)) {
    const dot = name.lastIndexOf(".");
    const owner = at(name.slice(0, dot));
    const prop = resolve(properties(owner)[name.slice(dot + 1)]);
    assert.ok(prop?.enum, `${name} has no enum in the document`);
    assert.deepEqual([...values].sort(), [...prop.enum].sort(), `${name}: the values differ`);
  }
});

test("every enum of the document is in SCHEMA_ENUMS", () => {
  const missing: string[] = [];
  for (const name of Object.keys(SCHEMA_PROPERTIES)) {
    for (const [p, raw] of Object.entries(properties(at(name)))) {
      if (resolve(raw)?.enum && !raw.$ref && !Object.hasOwn(SCHEMA_ENUMS, `${name}.${p}`)) missing.push(`${name}.${p}`);
    }
  }
  // RecallFact's parts come from Fact: its enum is checked as RecallFact.status.
  assert.deepEqual(missing, []);
});

/** A schema's required names, the parts of an allOf merged. */
function required(s: any): string[] {
  s = resolve(s);
  if (s.allOf) return s.allOf.flatMap(required);
  return s.required ?? [];
}

test("SCHEMA_REQUIRED has exactly the document's required lists", () => {
  const documented: Record<string, string[]> = {};
  for (const name of Object.keys(SCHEMA_PROPERTIES)) {
    const r = required(at(name));
    if (r.length) documented[name] = [...r].sort();
  }
  const ours = Object.fromEntries(Object.entries(SCHEMA_REQUIRED).map(([k, v]) => [k, [...v].sort()]));
  assert.deepEqual(ours, documented);
});
