// The scripted W2 turn the store benchmarks drive: an instant model that asks for one tool call,
// then answers once the tool result is in; a turn ends completed or the bench stops. The tool is a
// pure `lookup` (no effect outside the process: no commit of its own, issue 26's three commits), or
// with `BENCH_TOOL=effect` a `note` that has an effect (its intent is committed before it runs).
import {
  defineTool,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
} from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import type { Runtime, RuntimeConfig } from "@alma-harness/runtime";
import { benchConfig } from "../config.js";

/** Tool call first, then the answer, decided by the request so concurrent turns cannot mix scripts. */
export class ScriptedByRequest implements ModelClient {
  readonly id = "fake";
  readonly provider = "fake";
  validate(): void {}
  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    const afterTool = request.messages.at(-1)?.blocks.some((b) => b.type === "tool_result");
    const script = afterTool
      ? scriptedText("done")
      : scriptedToolCall({
          id: `c${Math.random().toString(36).slice(2)}`,
          name: TOOL.name,
          input: { text: "x" },
        });
    yield* script.events;
  }
}

/** The W2 turn's tool: pure by default, an effect with `BENCH_TOOL=effect`. */
export const TOOL =
  process.env.BENCH_TOOL === "effect"
    ? defineTool({
        name: "note",
        description: "Takes a note.",
        input: { type: "object" },
        handler: () => "ok",
      })
    : defineTool({
        name: "lookup",
        description: "Looks up a fact.",
        input: { type: "object" },
        pure: true,
        handler: () => "ok",
      });

/** The benchmark configuration over the scripted model; `park`: the host's default since issue 25. */
export function scriptedConfig(asks: "wait" | "park"): RuntimeConfig {
  const config = benchConfig(new ScriptedByRequest(), [TOOL], 4);
  return asks === "park" ? { ...config, asks: "park" } : config;
}

/** One W2 turn; throws unless it completed. */
export async function runScriptedTurn(rt: Runtime, sessionId: string, key: string): Promise<void> {
  const view = await rt.runner.runTurn({
    scope: { org: "bench", uid: "u" },
    sessionId,
    idempotencyKey: key,
    input: "hi",
    intent: { tier: "balanced", sensitivity: "internal" },
  });
  if (view.status !== "completed") throw new Error(`turn ${key}: ${view.status}`);
}
