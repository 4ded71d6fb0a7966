// Scripted models for the AI SDK tests: the AI SDK's own MockLanguageModelV3
// (ai/test), answering each call with the next step of a script. No network.
import { MockLanguageModelV3 } from "ai/test";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** A step in which the model calls one tool. */
export function toolCall(toolCallId: string, toolName: string, input: Record<string, unknown>) {
  return {
    content: [{ type: "tool-call" as const, toolCallId, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
    usage,
    warnings: [],
  };
}

/** A step in which the model answers with text, ending the turn. */
export function answer(text: string) {
  return {
    content: [{ type: "text" as const, text }],
    finishReason: { unified: "stop" as const, raw: "stop" },
    usage,
    warnings: [],
  };
}

/** A model that answers its calls with the steps given, in order. */
export function scripted(...steps: ReturnType<typeof toolCall | typeof answer>[]): MockLanguageModelV3 {
  return new MockLanguageModelV3({ doGenerate: steps });
}

/** The texts a model call was given, in order: the system prompt, messages' text parts, tool results. */
export function promptTexts(model: MockLanguageModelV3, call: number): string[] {
  const out: string[] = [];
  for (const m of model.doGenerateCalls[call]?.prompt ?? []) {
    if (typeof m.content === "string") {
      out.push(m.content);
      continue;
    }
    for (const p of m.content) {
      if (p.type === "text") out.push(p.text);
      else if (p.type === "tool-result" && "value" in p.output) {
        out.push(typeof p.output.value === "string" ? p.output.value : JSON.stringify(p.output.value));
      }
    }
  }
  return out;
}
