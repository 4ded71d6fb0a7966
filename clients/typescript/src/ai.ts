/**
 * `remember`, `recall` and `forget` as Vercel AI SDK tools (`@sgam/client/ai`):
 *
 * ```ts
 * import { generateText, stepCountIs } from "ai";
 * import { Client } from "@sgam/client";
 * import { memoryTools } from "@sgam/client/ai";
 *
 * const tools = memoryTools(new Client({ apiKey: KEY }), { session: "thread-1" });
 * const result = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: "My favorite color is teal." });
 * ```
 *
 * Each is a `tool()` bound to the tenant of the client's key: no argument
 * names a tenant. See {@link MemoryTools} for what each does. This entry
 * point needs the `ai` package (a peer dependency of `@sgam/client`, which
 * itself has none); the core entry point does not load it.
 */
import { jsonSchema, tool, type JSONSchema7, type Tool } from "ai";
import { Client } from "./client.js";
import { ARGUMENTS, FORGET, MemoryTools, RECALL, REMEMBER, type ForgetInput, type MemoryToolsOptions, type RecallInput, type RememberInput } from "./tools.js";

/** The tool set {@link memoryTools} returns: pass it as `tools` (or spread it into yours). */
export type MemoryToolSet = {
  remember: Tool<RememberInput, string>;
  recall: Tool<RecallInput, string>;
  forget: Tool<ForgetInput, string>;
};

/**
 * The input schema of one tool: every argument a required string, no other
 * (so it qualifies for providers' strict mode). The AI SDK checks the model's
 * input with `validate` before `execute` runs, and hands a failure back to the
 * model as the tool's error.
 */
function inputSchema<T>(name: keyof typeof ARGUMENTS) {
  const args: Record<string, string> = ARGUMENTS[name];
  const names = Object.keys(args);
  const schema: JSONSchema7 = {
    type: "object",
    properties: Object.fromEntries(names.map((n) => [n, { type: "string", description: args[n] }])),
    required: names,
    additionalProperties: false,
  };
  return jsonSchema<T>(schema, {
    validate: (value) => {
      const v = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
      const bad = names.filter((n) => typeof v[n] !== "string");
      if (bad.length) return { success: false, error: new TypeError(`${bad.join(", ")}: a string is required`) };
      // Only the arguments the tool has: a stray one is dropped, not passed on.
      return { success: true, value: Object.fromEntries(names.map((n) => [n, v[n]])) as T };
    },
  });
}

/**
 * The tools `remember`, `recall` and `forget` for `generateText`,
 * `streamText` and agents. `client` defaults to `new Client()` ($SGAM_URL,
 * $SGAM_API_KEY); `session`, `kind` and `budget` are {@link MemoryToolsOptions}.
 * A tool resolves to text; an error of the API is that text too
 * (`error: forbidden: ...`), so the model sees it and can correct its call.
 */
export function memoryTools(client: Client = new Client(), options: MemoryToolsOptions = {}): MemoryToolSet {
  const m = new MemoryTools(client, options);
  return {
    remember: tool({
      description: REMEMBER, inputSchema: inputSchema<RememberInput>("remember"), strict: true,
      execute: (input) => m.remember(input),
    }),
    recall: tool({
      description: RECALL, inputSchema: inputSchema<RecallInput>("recall"), strict: true,
      execute: (input) => m.recall(input),
    }),
    forget: tool({
      description: FORGET, inputSchema: inputSchema<ForgetInput>("forget"), strict: true,
      execute: (input) => m.forget(input),
    }),
  };
}
