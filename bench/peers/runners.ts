// The runners of `npm run bench:peers`: Alma (runtime and engine alone) and the three peers, each
// answering from the same scripted, instant model. The measurement is peers.bench.ts.
import {
  defineTool,
  type Msg,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  normalizeBudgetCaps,
  randomIds,
  systemClock,
  type ToolDefinition,
} from "@alma-harness/core";
import {
  InMemoryCostSettlementStore,
  InMemoryExecutionStore,
  InMemorySpendStore,
  RecordingAuditLog,
} from "@alma-harness/core/testing";
import { GovernedCalls } from "@alma-harness/execution";
import { createEngine, type TurnInput } from "@alma-harness/loop";
import { memory } from "@alma-harness/runtime";
import { benchConfig } from "../config.js";
import { Agent as PiAgent, type AgentMessage, type AgentTool } from "@mariozechner/pi-agent-core";
import {
  type AssistantMessage,
  createAssistantMessageEventStream,
  type Model as PiModel,
} from "@mariozechner/pi-ai";
import {
  Agent as OaiAgent,
  type AgentInputItem,
  type Model as OaiModel,
  type ModelRequest as OaiModelRequest,
  type ModelResponse as OaiModelResponse,
  Runner as OaiRunner,
  setTracingDisabled,
  tool as oaiTool,
  Usage as OaiUsage,
} from "@openai/agents";
import { generateText, type ModelMessage, stepCountIs, tool as aiTool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
import { Type } from "typebox";

export type Workload = "w2" | "w3" | "w4";
/** Runs turn `i` of a prepared batch and resolves to what the runner hands back for it. */
export type Turn = (i: number) => Promise<unknown>;
export interface Runner {
  readonly name: string;
  /** Fresh state for `n` turns of a workload (untimed): a runtime, agents, seeded history. */
  batch(workload: Workload, n: number): Promise<Turn>;
}

const HISTORY = 200;
const EXTRA_TOOLS = 99;
const ANSWER = "answer";
const TOOL = { name: "lookup", description: "Looks something up." } as const;
// The one tool, the same small object everywhere; W4 adds 99 trivial tools beside it.
const lookup = (q: string) => ({ found: q });
const extraNames = Array.from({ length: EXTRA_TOOLS }, (_, i) => `tool_${i}`);
let callSeq = 0;
const nextCallId = () => `call_${++callSeq}`;
/** The prior conversation of W3: alternating user and assistant text, 200 messages. */
const pastText = (j: number) => `message ${j}`;

// ---------------------------------------------------------------- Alma (runtime and engine alone)
/** The scripted model: a tool call unless the last message carries a tool result, then the answer. */
class ScriptedAlmaModel implements ModelClient {
  readonly id = "fake";
  readonly provider = "fake";
  validate(): void {}
  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    const usage = { inputTokens: 10, outputTokens: 5 };
    if (request.messages.at(-1)?.blocks.some((b) => b.type === "tool_result")) {
      yield { type: "text_delta", text: ANSWER };
      yield { type: "usage", evidence: { status: "known", usage } };
      yield {
        type: "response_completed",
        stopReason: "end_turn",
        text: ANSWER,
        toolCalls: [],
        usage,
      };
      return;
    }
    const call = { id: nextCallId(), name: TOOL.name, arguments: JSON.stringify({ q: "x" }) };
    yield { type: "tool_call", ...call };
    yield { type: "usage", evidence: { status: "known", usage } };
    yield {
      type: "response_completed",
      stopReason: "tool_use",
      text: "",
      toolCalls: [call],
      usage,
    };
  }
}

const almaLookup = defineTool({
  name: TOOL.name,
  description: TOOL.description,
  input: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
  handler: (input) => lookup(input.q as string),
});
const almaExtras = extraNames.map((name, i) =>
  defineTool({
    name,
    description: `Extra tool ${i}.`,
    input: { type: "object" },
    handler: () => "ok",
  }),
);
const almaTools = (w: Workload): ToolDefinition[] =>
  w === "w4" ? [almaLookup, ...almaExtras] : [almaLookup];
const almaPast: Msg[] = Array.from({ length: HISTORY }, (_, j) => ({
  role: j % 2 === 0 ? "user" : "assistant",
  blocks: [{ type: "text", text: pastText(j) }],
}));
const choice = { clientId: "fake", model: "m", maxOutputTokens: 256, cache: false } as const;
const prices = { version: "p", models: { m: { rates: { input: 1, output: 2 } } } };
const scope = { org: "bench", uid: "u" };
const intent = { tier: "balanced", sensitivity: "internal" } as const;
let batchSeq = 0;

const almaRuntime: Runner = {
  name: "alma runtime",
  async batch(w, n) {
    const b = ++batchSeq;
    const rt = memory(benchConfig(new ScriptedAlmaModel(), almaTools(w)));
    const session = (i: number) => `b${b}-s${i}`;
    if (w === "w3") {
      // Seeded the way bench/turn.bench.ts does: one events admission appends the prior messages.
      for (let i = 0; i < n; i++) {
        const now = Date.now();
        const admission = await rt.stores.admissions.admit({
          scope,
          sessionId: session(i),
          rootKey: "seed",
          kind: "events",
          admissionId: `seed${i}`,
          now,
          deadlineAt: now + 60_000,
        });
        if (admission.status !== "admitted")
          throw new Error("alma runtime: seeding was not admitted");
        await rt.stores.sessions.append(scope, session(i), almaPast, {
          admissionId: `seed${i}`,
          now,
        });
        await rt.stores.admissions.finish(scope, `seed${i}`);
      }
    }
    return async (i) => {
      const view = await rt.runner.runTurn({
        scope,
        sessionId: session(i),
        idempotencyKey: `k${i}`,
        input: "hello",
        intent,
      });
      if (view.status !== "completed") throw new Error(`alma runtime turn ${i}: ${view.status}`);
      return view;
    };
  },
};

// The engine alone, composed as packages/loop/test/harness.ts composes it: in-memory journal,
// settlements and spend, a recording audit log, the system clock and random ids (the runtime's
// defaults); no admission, no session store, no result store.
const almaEngine: Runner = {
  name: "alma engine",
  async batch(w) {
    const b = ++batchSeq;
    const audit = new RecordingAuditLog();
    const spend = new InMemorySpendStore();
    const calls = new GovernedCalls({
      journal: new InMemoryExecutionStore(),
      settlements: new InMemoryCostSettlementStore({ spend }),
      spend,
      prices,
      caps: normalizeBudgetCaps(undefined),
      policyVersion: "p",
      audit,
    });
    const engine = createEngine({
      clients: [new ScriptedAlmaModel()],
      policy: { resolve: () => choice },
      tools: almaTools(w),
      system: "bench",
      limits: { maxCalls: 8 },
      calls,
      audit,
      clock: systemClock,
      ids: randomIds,
    });
    const history = w === "w3" ? almaPast : [];
    const input = (i: number): TurnInput => ({
      scope,
      sessionId: `b${b}-s${i}`,
      rootKey: `b${b}-r${i}`,
      turnId: `b${b}-t${i}`,
      history,
      revision: history.length,
      input: [{ type: "text", text: "hello" }],
      intent,
    });
    return async (i) => {
      const outcome = await engine.runTurn(input(i));
      if (outcome.status !== "completed")
        throw new Error(`alma engine turn ${i}: ${outcome.status}`);
      return outcome;
    };
  },
};

// ---------------------------------------------------------------- pi-agent-core
const piModel: PiModel<string> = {
  id: "m",
  name: "scripted",
  api: "scripted",
  provider: "scripted",
  baseUrl: "http://127.0.0.1:0",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128_000,
  maxTokens: 256,
};
const piUsage = {
  input: 10,
  output: 5,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 15,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
/** pi's model seam (`streamFn`): the same script, streamed as a provider adapter would stream it. */
const piStream = (_model: PiModel<string>, context: { messages: readonly { role: string }[] }) => {
  const stream = createAssistantMessageEventStream();
  const afterTool = context.messages.at(-1)?.role === "toolResult";
  const base = {
    role: "assistant",
    api: piModel.api,
    provider: piModel.provider,
    model: piModel.id,
    usage: piUsage,
    timestamp: Date.now(),
  } as const;
  if (afterTool) {
    const message: AssistantMessage = {
      ...base,
      content: [{ type: "text", text: ANSWER }],
      stopReason: "stop",
    };
    const empty: AssistantMessage = { ...message, content: [] };
    stream.push({ type: "start", partial: empty });
    stream.push({
      type: "text_start",
      contentIndex: 0,
      partial: { ...empty, content: [{ type: "text", text: "" }] },
    });
    stream.push({ type: "text_delta", contentIndex: 0, delta: ANSWER, partial: message });
    stream.push({ type: "text_end", contentIndex: 0, content: ANSWER, partial: message });
    stream.push({ type: "done", reason: "stop", message });
    stream.end(message);
  } else {
    const call = {
      type: "toolCall" as const,
      id: nextCallId(),
      name: TOOL.name,
      arguments: { q: "x" },
    };
    const message: AssistantMessage = { ...base, content: [call], stopReason: "toolUse" };
    const empty: AssistantMessage = { ...message, content: [] };
    stream.push({ type: "start", partial: empty });
    stream.push({
      type: "toolcall_start",
      contentIndex: 0,
      partial: { ...empty, content: [{ ...call, arguments: {} }] },
    });
    stream.push({
      type: "toolcall_delta",
      contentIndex: 0,
      delta: JSON.stringify(call.arguments),
      partial: message,
    });
    stream.push({ type: "toolcall_end", contentIndex: 0, toolCall: call, partial: message });
    stream.push({ type: "done", reason: "toolUse", message });
    stream.end(message);
  }
  return stream;
};
const piLookup: AgentTool = {
  name: TOOL.name,
  label: "Lookup",
  description: TOOL.description,
  parameters: Type.Object({ q: Type.String() }),
  execute: async (_id, params) => {
    const found = lookup((params as { q: string }).q);
    return { content: [{ type: "text", text: JSON.stringify(found) }], details: found };
  },
};
const piExtras: AgentTool[] = extraNames.map((name, i) => ({
  name,
  label: name,
  description: `Extra tool ${i}.`,
  parameters: Type.Object({}),
  execute: async () => ({ content: [{ type: "text", text: "ok" }], details: {} }),
}));
const piPast: AgentMessage[] = Array.from({ length: HISTORY }, (_, j) =>
  j % 2 === 0
    ? { role: "user", content: pastText(j), timestamp: 0 }
    : {
        role: "assistant",
        content: [{ type: "text", text: pastText(j) }],
        api: piModel.api,
        provider: piModel.provider,
        model: piModel.id,
        usage: piUsage,
        stopReason: "stop",
        timestamp: 0,
      },
);

// One Agent per turn: pi's Agent is the session (it holds the messages), so a new session per turn
// is a new Agent, constructed inside the timed turn. The prompt's result is the agent's state.
const pi: Runner = {
  name: "pi-agent-core",
  async batch(w) {
    const tools = w === "w4" ? [piLookup, ...piExtras] : [piLookup];
    const messages = w === "w3" ? piPast : [];
    return async () => {
      const agent = new PiAgent({
        initialState: { systemPrompt: "bench", model: piModel, tools, messages },
        streamFn: piStream as never,
        sessionId: "s",
      });
      await agent.prompt("hello");
      const last = agent.state.messages.at(-1);
      if (
        agent.state.messages.length !== messages.length + 4 ||
        last?.role !== "assistant" ||
        last.stopReason !== "stop"
      )
        throw new Error("pi-agent-core: the turn did not end in the answer");
      return agent;
    };
  },
};

// ---------------------------------------------------------------- Vercel AI SDK (generateText)
const aiUsage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};
function aiModel() {
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      // The mock records every call; drop them so no runner's model retains its requests.
      model.doGenerateCalls.length = 0;
      if (options.prompt.at(-1)?.role === "tool") {
        return {
          content: [{ type: "text", text: ANSWER }],
          finishReason: { unified: "stop", raw: "stop" },
          usage: aiUsage,
          warnings: [],
        };
      }
      return {
        content: [
          {
            type: "tool-call",
            toolCallId: nextCallId(),
            toolName: TOOL.name,
            input: JSON.stringify({ q: "x" }),
          },
        ],
        finishReason: { unified: "tool-calls", raw: "tool_calls" },
        usage: aiUsage,
        warnings: [],
      };
    },
  });
  return model;
}
const aiLookup = aiTool({
  description: TOOL.description,
  inputSchema: z.object({ q: z.string() }),
  execute: async ({ q }) => lookup(q),
});
const aiExtras = Object.fromEntries(
  extraNames.map((name, i) => [
    name,
    aiTool({
      description: `Extra tool ${i}.`,
      inputSchema: z.object({}),
      execute: async () => "ok",
    }),
  ]),
);
const aiPast: ModelMessage[] = Array.from({ length: HISTORY }, (_, j) =>
  j % 2 === 0
    ? { role: "user", content: pastText(j) }
    : { role: "assistant", content: [{ type: "text", text: pastText(j) }] },
);

const vercel: Runner = {
  name: "ai (generateText)",
  async batch(w) {
    const model = aiModel();
    const tools = w === "w4" ? { [TOOL.name]: aiLookup, ...aiExtras } : { [TOOL.name]: aiLookup };
    const past = w === "w3" ? aiPast : [];
    return async () => {
      const result = await generateText({
        model,
        system: "bench",
        tools,
        messages: [...past, { role: "user", content: "hello" }],
        stopWhen: stepCountIs(8),
        maxOutputTokens: 256,
      });
      if (result.text !== ANSWER || result.steps.length !== 2)
        throw new Error(`ai: the turn did not end in the answer (${result.steps.length} steps)`);
      return result;
    };
  },
};

// ---------------------------------------------------------------- OpenAI Agents SDK
setTracingDisabled(true);
class ScriptedOaiModel implements OaiModel {
  async getResponse(request: OaiModelRequest): Promise<OaiModelResponse> {
    const last = typeof request.input === "string" ? undefined : request.input.at(-1);
    const usage = new OaiUsage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 });
    if (last && "type" in last && last.type === "function_call_result") {
      return {
        usage,
        output: [
          {
            type: "message",
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: ANSWER }],
          },
        ],
      };
    }
    return {
      usage,
      output: [
        {
          type: "function_call",
          callId: nextCallId(),
          name: TOOL.name,
          arguments: JSON.stringify({ q: "x" }),
          status: "completed",
        },
      ],
    };
  }
  // biome-ignore lint/correctness/useYield: the benchmark runs non-streamed; a stream is never asked for.
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not streamed in this benchmark");
  }
}
const oaiLookup = oaiTool({
  name: TOOL.name,
  description: TOOL.description,
  parameters: z.object({ q: z.string() }),
  execute: async ({ q }) => lookup(q),
});
const oaiExtras = extraNames.map((name, i) =>
  oaiTool({
    name,
    description: `Extra tool ${i}.`,
    parameters: z.object({}),
    execute: async () => "ok",
  }),
);
const oaiPast: AgentInputItem[] = Array.from({ length: HISTORY }, (_, j) =>
  j % 2 === 0
    ? { role: "user", content: pastText(j) }
    : {
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: pastText(j) }],
      },
);

const openai: Runner = {
  name: "@openai/agents",
  async batch(w) {
    const agent = new OaiAgent({
      name: "bench",
      instructions: "bench",
      model: new ScriptedOaiModel(),
      tools: w === "w4" ? [oaiLookup, ...oaiExtras] : [oaiLookup],
    });
    const runner = new OaiRunner({ tracingDisabled: true });
    const past = w === "w3" ? oaiPast : [];
    return async () => {
      const result = await runner.run(agent, [...past, { role: "user", content: "hello" }]);
      if (result.finalOutput !== ANSWER)
        throw new Error("@openai/agents: the turn did not end in the answer");
      return result;
    };
  },
};

export const RUNNERS: readonly Runner[] = [almaRuntime, almaEngine, pi, vercel, openai];
export const BASE = "pi-agent-core";
