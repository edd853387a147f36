// The one configuration of the kill-at-every-store-call test: the worker process runs the turn with
// it, the test process recovers with it (the same prices, policy and trail key, as two processes of
// one deployment must share them).
import type { ConversationConfig, RunTurnRequest } from "@alma-harness/conversation";
import {
  defineTool,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  type Scope,
} from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { DEPLOYMENT } from "./deployment.js";

export const KILL_SCOPE: Scope = { org: "kill", uid: "u" };
export const KILL_SESSION = "s-kill";
export const KILL_KEY = "k-kill";
export const KILL_INPUT = "note this, please";

export const KILL_REQUEST: RunTurnRequest = {
  scope: KILL_SCOPE,
  sessionId: KILL_SESSION,
  idempotencyKey: KILL_KEY,
  input: KILL_INPUT,
  intent: { tier: "balanced", sensitivity: "internal" },
};

/** A tool call first, then an answer, decided by the request; `onDispatch` hears every call that reaches the "provider". */
class ToolThenAnswer implements ModelClient {
  readonly id = "fake";
  readonly provider = "fake";
  readonly #onDispatch: (afterTool: boolean) => void;
  constructor(onDispatch: (afterTool: boolean) => void) {
    this.#onDispatch = onDispatch;
  }
  validate(): void {}
  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    const afterTool =
      request.messages.at(-1)?.blocks.some((b) => b.type === "tool_result") ?? false;
    this.#onDispatch(afterTool);
    const script = afterTool
      ? scriptedText("noted")
      : scriptedToolCall({ id: "call_note_1", name: "note", input: { text: "x" } });
    for (const event of script.events) yield event;
  }
}

/** The turn's one tool; `pure` declares it so, `handler` replaces what it does (the kill-in-handler worker). */
const noteTool = (opts: { readonly pure?: boolean; readonly handler?: () => unknown } = {}) =>
  defineTool({
    name: "note",
    description: "Takes a note.",
    input: { type: "object", properties: { text: { type: "string" } } },
    ...(opts.pure ? { pure: true } : {}),
    handler: opts.handler ?? (async (i) => ({ noted: i.text as string })),
  });

export function killConfig(
  onDispatch: (afterTool: boolean) => void,
  tool: { readonly pure?: boolean; readonly handler?: () => unknown } = {},
): Omit<ConversationConfig, "stores"> {
  const note = noteTool(tool);
  return {
    clients: [new ToolThenAnswer(onDispatch)],
    policy: {
      resolve: () => ({ clientId: "fake", model: "demo", maxOutputTokens: 256, cache: false }),
    },
    prompt: "kill",
    trailKey: "kill-test-trail-key-shared-by-both-processes",
    tools: [note],
    ...DEPLOYMENT,
  };
}
