// The SDK tests' fixtures: a real `sgam serve` started by .ci/sdk/serve.sh,
// whose env file .ci/sdk/typescript.sh names in $SGAM_SDK_ENV. Without it, the
// tests that need a server skip, loudly; under CI=true they fail instead.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Client, type ClientOptions } from "../src/index.js";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

export function openapiDoc(): any {
  return JSON.parse(readFileSync(path.join(REPO, "server", "openapi.json"), "utf8"));
}

export function documentedOperations(doc: any): Set<string> {
  const ops = new Set<string>();
  for (const [p, item] of Object.entries<any>(doc.paths)) {
    for (const method of Object.keys(item)) {
      if (["get", "post", "put", "patch", "delete", "head", "options"].includes(method)) ops.add(`${method.toUpperCase()} ${p}`);
    }
  }
  return ops;
}

function readEnv(): Record<string, string> | null {
  const file = process.env.SGAM_SDK_ENV;
  if (!file) return null;
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) env[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return env;
}

export const ENV = readEnv();
const NO_SERVER = "no sgam server: run the tests with `bash .ci/sdk/typescript.sh` (or set SGAM_SDK_ENV to serve.sh's env file)";
if (ENV === null && process.env.CI === "true") throw new Error(NO_SERVER);
if (ENV === null) console.warn(`SKIPPING the server tests: ${NO_SERVER}`);

/** Options of node:test's `test` for a test that needs the server: skipped without one. */
export const needsServer = { skip: ENV === null ? NO_SERVER : false } as const;

export function env(): Record<string, string> {
  if (ENV === null) throw new Error(NO_SERVER);
  return ENV;
}

/** Every key the server has: the tests look for them in errors and inspect output. */
export function keys(): string[] {
  return Object.entries(env()).filter(([k]) => k.endsWith("_KEY")).map(([, v]) => v);
}

export function client(keyName: string, options: ClientOptions = {}): Client {
  return new Client({ baseUrl: env().SGAM_URL, apiKey: env()[keyName], ...options });
}

/** A fresh lowercase word: each test writes its own subjects. */
export function uid(): string {
  return Array.from(randomBytes(10), (b) => String.fromCharCode(97 + (b % 26))).join("");
}

export function t(day: number, hour = 9): Date {
  return new Date(Date.UTC(2026, 5, day, hour));
}

export const SCHEMA_YAML = `name: sdk-tests
retention:
  hourly: 1h
attributes:
  full_name: {memory: profile, type: string}
  email_opt_in: {memory: preference, type: boolean, sensitive: true}
  account: {memory: relation, type: {ref: account}}
  owner: {memory: relation, type: {ref: customer}}
  plan: {memory: account, type: {enum: [free, pro]}}
  tags: {memory: profile, type: string, cardinality: many}
  lifetime_value: {memory: account, type: number}
  address:
    memory: profile
    json_schema:
      type: object
      properties:
        zip: {type: string, pattern: "^[0-9]{4,5}$"}
      required: [zip]
      additionalProperties: false
`;

/** An admin client of tenant delta, with the tests' schema applied. */
export async function delta(options: ClientOptions = {}): Promise<Client> {
  const c = client("SGAM_DELTA_ADMIN_KEY", options);
  await c.schema.apply(SCHEMA_YAML);
  return c;
}

/** A fetch that notes each operation's method and path. */
export function recordingFetch(seen: string[]): typeof fetch {
  return (input, init) => {
    seen.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`);
    return fetch(input, init);
  };
}
