// npm run bench:peers — Alma beside three peer agent runtimes on the same scripted, instant model
// (no network, no timers in any model). See bench/README.md "Peers" for what each workload is.
// Alma comes from source through the workspace packages (node --conditions=alma-source --import
// tsx, run from the repo root); the peers resolve from bench/peers/node_modules, which Node finds
// first because this file lives in bench/peers. Never asserts a timing: it prints a report.
import { spawnSync } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { defineTool, type Msg, type ModelClient, type ModelRequest, type ModelStreamEvent, normalizeBudgetCaps, randomIds, systemClock, type ToolDefinition } from "@alma-harness/core";
import { InMemoryCostSettlementStore, InMemoryExecutionStore, InMemorySpendStore, RecordingAuditLog } from "@alma-harness/core/testing";
import { GovernedCalls } from "@alma-harness/execution";
import { createEngine, type TurnInput } from "@alma-harness/loop";
import { memory } from "@alma-harness/runtime";
import { benchConfig } from "../config.js";
import { Agent as PiAgent, type AgentMessage, type AgentTool } from "@mariozechner/pi-agent-core";
import { type AssistantMessage, createAssistantMessageEventStream, type Model as PiModel } from "@mariozechner/pi-ai";
import { Agent as OaiAgent, type AgentInputItem, type Model as OaiModel, type ModelRequest as OaiModelRequest, type ModelResponse as OaiModelResponse, Runner as OaiRunner, setTracingDisabled, tool as oaiTool, Usage as OaiUsage } from "@openai/agents";
import { generateText, type ModelMessage, stepCountIs, tool as aiTool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
import { Type } from "typebox";

type Workload = "w2" | "w3" | "w4";
/** Runs turn `i` of a prepared batch and resolves to what the runner hands back for it. */
type Turn = (i: number) => Promise<unknown>;
interface Runner {
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
      yield { type: "response_completed", stopReason: "end_turn", text: ANSWER, toolCalls: [], usage };
      return;
    }
    const call = { id: nextCallId(), name: TOOL.name, arguments: JSON.stringify({ q: "x" }) };
    yield { type: "tool_call", ...call };
    yield { type: "usage", evidence: { status: "known", usage } };
    yield { type: "response_completed", stopReason: "tool_use", text: "", toolCalls: [call], usage };
  }
}

const almaLookup = defineTool({
  name: TOOL.name,
  description: TOOL.description,
  input: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
  handler: (input) => lookup(input.q as string),
});
const almaExtras = extraNames.map((name, i) => defineTool({ name, description: `Extra tool ${i}.`, input: { type: "object" }, handler: () => "ok" }));
const almaTools = (w: Workload): ToolDefinition[] => (w === "w4" ? [almaLookup, ...almaExtras] : [almaLookup]);
const almaPast: Msg[] = Array.from({ length: HISTORY }, (_, j) => ({ role: j % 2 === 0 ? "user" : "assistant", blocks: [{ type: "text", text: pastText(j) }] }));
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
        const admission = await rt.stores.admissions.admit({ scope, sessionId: session(i), rootKey: "seed", kind: "events", admissionId: `seed${i}`, now, deadlineAt: now + 60_000 });
        if (admission.status !== "admitted") throw new Error("alma runtime: seeding was not admitted");
        await rt.stores.sessions.append(scope, session(i), almaPast, { admissionId: `seed${i}`, now });
        await rt.stores.admissions.finish(scope, `seed${i}`);
      }
    }
    return async (i) => {
      const view = await rt.runner.runTurn({ scope, sessionId: session(i), idempotencyKey: `k${i}`, input: "hello", intent });
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
      if (outcome.status !== "completed") throw new Error(`alma engine turn ${i}: ${outcome.status}`);
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
const piUsage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
/** pi's model seam (`streamFn`): the same script, streamed as a provider adapter would stream it. */
const piStream = (_model: PiModel<string>, context: { messages: readonly { role: string }[] }) => {
  const stream = createAssistantMessageEventStream();
  const afterTool = context.messages.at(-1)?.role === "toolResult";
  const base = { role: "assistant", api: piModel.api, provider: piModel.provider, model: piModel.id, usage: piUsage, timestamp: Date.now() } as const;
  if (afterTool) {
    const message: AssistantMessage = { ...base, content: [{ type: "text", text: ANSWER }], stopReason: "stop" };
    const empty: AssistantMessage = { ...message, content: [] };
    stream.push({ type: "start", partial: empty });
    stream.push({ type: "text_start", contentIndex: 0, partial: { ...empty, content: [{ type: "text", text: "" }] } });
    stream.push({ type: "text_delta", contentIndex: 0, delta: ANSWER, partial: message });
    stream.push({ type: "text_end", contentIndex: 0, content: ANSWER, partial: message });
    stream.push({ type: "done", reason: "stop", message });
    stream.end(message);
  } else {
    const call = { type: "toolCall" as const, id: nextCallId(), name: TOOL.name, arguments: { q: "x" } };
    const message: AssistantMessage = { ...base, content: [call], stopReason: "toolUse" };
    const empty: AssistantMessage = { ...message, content: [] };
    stream.push({ type: "start", partial: empty });
    stream.push({ type: "toolcall_start", contentIndex: 0, partial: { ...empty, content: [{ ...call, arguments: {} }] } });
    stream.push({ type: "toolcall_delta", contentIndex: 0, delta: JSON.stringify(call.arguments), partial: message });
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
    : { role: "assistant", content: [{ type: "text", text: pastText(j) }], api: piModel.api, provider: piModel.provider, model: piModel.id, usage: piUsage, stopReason: "stop", timestamp: 0 },
);

// One Agent per turn: pi's Agent is the session (it holds the messages), so a new session per turn
// is a new Agent, constructed inside the timed turn. The prompt's result is the agent's state.
const pi: Runner = {
  name: "pi-agent-core",
  async batch(w) {
    const tools = w === "w4" ? [piLookup, ...piExtras] : [piLookup];
    const messages = w === "w3" ? piPast : [];
    return async () => {
      const agent = new PiAgent({ initialState: { systemPrompt: "bench", model: piModel, tools, messages }, streamFn: piStream as never, sessionId: "s" });
      await agent.prompt("hello");
      const last = agent.state.messages.at(-1);
      if (agent.state.messages.length !== messages.length + 4 || last?.role !== "assistant" || last.stopReason !== "stop") throw new Error("pi-agent-core: the turn did not end in the answer");
      return agent;
    };
  },
};

// ---------------------------------------------------------------- Vercel AI SDK (generateText)
const aiUsage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } };
function aiModel() {
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      // The mock records every call; drop them so no runner's model retains its requests.
      model.doGenerateCalls.length = 0;
      if (options.prompt.at(-1)?.role === "tool") {
        return { content: [{ type: "text", text: ANSWER }], finishReason: { unified: "stop", raw: "stop" }, usage: aiUsage, warnings: [] };
      }
      return {
        content: [{ type: "tool-call", toolCallId: nextCallId(), toolName: TOOL.name, input: JSON.stringify({ q: "x" }) }],
        finishReason: { unified: "tool-calls", raw: "tool_calls" },
        usage: aiUsage,
        warnings: [],
      };
    },
  });
  return model;
}
const aiLookup = aiTool({ description: TOOL.description, inputSchema: z.object({ q: z.string() }), execute: async ({ q }) => lookup(q) });
const aiExtras = Object.fromEntries(extraNames.map((name, i) => [name, aiTool({ description: `Extra tool ${i}.`, inputSchema: z.object({}), execute: async () => "ok" })]));
const aiPast: ModelMessage[] = Array.from({ length: HISTORY }, (_, j) => (j % 2 === 0 ? { role: "user", content: pastText(j) } : { role: "assistant", content: [{ type: "text", text: pastText(j) }] }));

const vercel: Runner = {
  name: "ai (generateText)",
  async batch(w) {
    const model = aiModel();
    const tools = w === "w4" ? { [TOOL.name]: aiLookup, ...aiExtras } : { [TOOL.name]: aiLookup };
    const past = w === "w3" ? aiPast : [];
    return async () => {
      const result = await generateText({ model, system: "bench", tools, messages: [...past, { role: "user", content: "hello" }], stopWhen: stepCountIs(8), maxOutputTokens: 256 });
      if (result.text !== ANSWER || result.steps.length !== 2) throw new Error(`ai: the turn did not end in the answer (${result.steps.length} steps)`);
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
      return { usage, output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: ANSWER }] }] };
    }
    return { usage, output: [{ type: "function_call", callId: nextCallId(), name: TOOL.name, arguments: JSON.stringify({ q: "x" }), status: "completed" }] };
  }
  // biome-ignore lint/correctness/useYield: the benchmark runs non-streamed; a stream is never asked for.
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not streamed in this benchmark");
  }
}
const oaiLookup = oaiTool({ name: TOOL.name, description: TOOL.description, parameters: z.object({ q: z.string() }), execute: async ({ q }) => lookup(q) });
const oaiExtras = extraNames.map((name, i) => oaiTool({ name, description: `Extra tool ${i}.`, parameters: z.object({}), execute: async () => "ok" }));
const oaiPast: AgentInputItem[] = Array.from({ length: HISTORY }, (_, j) =>
  j % 2 === 0 ? { role: "user", content: pastText(j) } : { role: "assistant", status: "completed", content: [{ type: "output_text", text: pastText(j) }] },
);

const openai: Runner = {
  name: "@openai/agents",
  async batch(w) {
    const agent = new OaiAgent({ name: "bench", instructions: "bench", model: new ScriptedOaiModel(), tools: w === "w4" ? [oaiLookup, ...oaiExtras] : [oaiLookup] });
    const runner = new OaiRunner({ tracingDisabled: true });
    const past = w === "w3" ? oaiPast : [];
    return async () => {
      const result = await runner.run(agent, [...past, { role: "user", content: "hello" }]);
      if (result.finalOutput !== ANSWER) throw new Error("@openai/agents: the turn did not end in the answer");
      return result;
    };
  },
};

const RUNNERS: readonly Runner[] = [almaRuntime, almaEngine, pi, vercel, openai];
const BASE = "pi-agent-core";

// ---------------------------------------------------------------- measurement
const now = () => process.hrtime.bigint();
const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const gc = () => {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) throw new Error("the heap figure needs --expose-gc");
  g();
  g();
};

/**
 * One batch, µs per turn (wall clock). No forced collection before it: tried, a full GC before
 * every batch made Alma's turns 1.5-2× slower and ai's up to 1.8× (likely V8 aging out code under
 * repeated full collections), so the garbage one batch leaves is collected wherever V8 decides,
 * and the rotation spreads that around.
 */
async function timedBatch(r: Runner, w: Workload, n: number): Promise<number> {
  const turn = await r.batch(w, n);
  const start = now();
  for (let i = 0; i < n; i++) await turn(i);
  return Number(now() - start) / 1000 / n;
}

interface W5 {
  readonly ms: number;
  readonly peakMb: number;
  readonly growthMb: number;
}

/** W5 in this (child) process: a sequential warm-up, then 1,000 concurrent W2 turns in separate sessions. */
async function w5(r: Runner, n: number): Promise<W5> {
  await timedBatch(r, "w2", 300);
  const turn = await r.batch("w2", n);
  const before = process.memoryUsage().rss;
  const start = now();
  await Promise.all(Array.from({ length: n }, (_, i) => turn(i)));
  const ms = Number(now() - start) / 1e6;
  const peak = Math.max(process.resourceUsage().maxRSS * 1024, process.memoryUsage().rss);
  return { ms, peakMb: peak / 2 ** 20, growthMb: (peak - before) / 2 ** 20 };
}

/** Heap growth while 1,000 W2 results are kept alive, after a full GC either side. */
async function heap(r: Runner, n: number): Promise<{ mb: number }> {
  await timedBatch(r, "w2", 300);
  const turn = await r.batch("w2", n);
  gc();
  const before = process.memoryUsage().heapUsed;
  const kept: unknown[] = [];
  for (let i = 0; i < n; i++) kept.push(await turn(i));
  gc();
  const after = process.memoryUsage().heapUsed;
  if (kept.length !== n) throw new Error("lost a result");
  return { mb: (after - before) / 2 ** 20 };
}

function child(mode: "w5" | "heap", name: string): Record<string, number> {
  const out = spawnSync(process.execPath, ["--expose-gc", "--conditions=alma-source", "--import", "tsx", fileURLToPath(import.meta.url), "--child", mode, name], {
    encoding: "utf8",
    env: process.env,
    maxBuffer: 16 * 2 ** 20,
  });
  const line = out.stdout.trim().split("\n").at(-1) ?? "";
  if (out.status !== 0 || !line.startsWith("{")) throw new Error(`child ${mode} ${name} failed (${out.status}):\n${out.stderr}`);
  return JSON.parse(line) as Record<string, number>;
}

const W5_TURNS = 1000;
const HEAP_RESULTS = 1000;
const args = process.argv.slice(2);
if (args[0] === "--child") {
  const r = RUNNERS.find((x) => x.name === args[2]);
  if (!r) throw new Error(`no runner ${args[2]}`);
  const result = args[1] === "w5" ? await w5(r, W5_TURNS) : await heap(r, HEAP_RESULTS);
  console.log(JSON.stringify(result));
} else {
  const N = Math.max(1, Number(process.env.BENCH_TURNS ?? 1000));
  const BATCH = Math.min(50, N);
  const ROUNDS = Math.ceil(N / BATCH);
  const WARMUP_ROUNDS = Math.max(1, Math.ceil(Math.min(N, 300) / BATCH));
  const W5_ROUNDS = Math.max(1, Number(process.env.BENCH_W5_ROUNDS ?? 3));
  const workloads: readonly Workload[] = ["w2", "w3", "w4"];
  const samples = new Map<string, number[]>();
  const loadAtStart = loadavg();
  // A runner that cannot run a workload is reported as such, never measured or faked.
  const failed = new Map<string, string>();
  const began = now();
  // Round-robin: each round runs one batch of every workload on every runner, the workload and
  // runner orders rotated each round so none always goes first or last; warm-up rounds discarded.
  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
    for (let j = 0; j < workloads.length; j++) {
      const w = workloads[(round + j) % workloads.length]!;
      for (let k = 0; k < RUNNERS.length; k++) {
        const r = RUNNERS[(round + k) % RUNNERS.length]!;
        if (failed.has(r.name)) continue;
        try {
          const us = await timedBatch(r, w, BATCH);
          if (round >= WARMUP_ROUNDS) samples.set(`${r.name}/${w}`, [...(samples.get(`${r.name}/${w}`) ?? []), us]);
        } catch (e) {
          failed.set(r.name, `${w}: ${e instanceof Error ? e.message : String(e)}`.split("\n")[0]!);
        }
      }
    }
  }
  const inProcessS = Number(now() - began) / 1e9;
  // W5 and the heap figure in a child process per runner, so each RSS and heap is its own;
  // W5 repeated W5_ROUNDS times, interleaved across runners, the median taken.
  const w5s = new Map<string, W5[]>();
  const heaps = new Map<string, number>();
  const inChild = (r: Runner, mode: "w5" | "heap") => {
    try {
      return child(mode, r.name);
    } catch (e) {
      failed.set(r.name, `${mode}: ${e instanceof Error ? e.message : String(e)}`.split("\n").slice(0, 2).join(" "));
      return undefined;
    }
  };
  for (let round = 0; round < W5_ROUNDS; round++) {
    for (let k = 0; k < RUNNERS.length; k++) {
      const r = RUNNERS[(round + k) % RUNNERS.length]!;
      if (failed.has(r.name)) continue;
      const got = inChild(r, "w5") as unknown as W5 | undefined;
      if (got) w5s.set(r.name, [...(w5s.get(r.name) ?? []), got]);
    }
  }
  for (const r of RUNNERS) {
    if (failed.has(r.name)) continue;
    const got = inChild(r, "heap");
    if (got) heaps.set(r.name, got.mb!);
  }

  interface Row {
    w2: number;
    w3: number;
    w4: number;
    w5ms: number;
    peakMb: number;
    growthMb: number;
    heapMb: number;
  }
  const rows = new Map<string, Row>();
  for (const r of RUNNERS) {
    if (failed.has(r.name)) continue;
    const m = (w: Workload) => median(samples.get(`${r.name}/${w}`)!);
    const w5r = w5s.get(r.name)!;
    rows.set(r.name, {
      w2: m("w2"),
      w3: m("w3"),
      w4: m("w4"),
      w5ms: median(w5r.map((x) => x.ms)),
      peakMb: median(w5r.map((x) => x.peakMb)),
      growthMb: median(w5r.map((x) => x.growthMb)),
      heapMb: heaps.get(r.name)!,
    });
  }
  const f1 = (x: number) => x.toFixed(1);
  const f2 = (x: number) => x.toFixed(2);
  const q = (a: number, b: number) => `${f2(a / b)}×`;
  const table: string[][] = [["runner", "W2 µs", "W3 µs", "W4 µs", "W3/W2", "W4/W2", "W5 ms", "W5 peak RSS MB", "W5 RSS growth MB", "heap MB / 1k results"]];
  for (const [name, x] of rows) table.push([name, f1(x.w2), f1(x.w3), f1(x.w4), f2(x.w3 / x.w2), f2(x.w4 / x.w2), f1(x.w5ms), x.peakMb.toFixed(0), x.growthMb.toFixed(0), f1(x.heapMb)]);
  for (const name of failed.keys()) table.push([name, "not run", ...Array.from({ length: 8 }, () => "-")]);
  const base = rows.get(BASE);
  for (const name of ["alma runtime", "alma engine"]) {
    const x = rows.get(name);
    if (!x || !base) continue;
    // A growth of a few MB is within the noise of RSS sampling: no ratio against it.
    const growth = base.growthMb < 5 ? "-" : q(x.growthMb, base.growthMb);
    table.push([`${name} ÷ ${BASE}`, q(x.w2, base.w2), q(x.w3, base.w3), q(x.w4, base.w4), q(x.w3 / x.w2, base.w3 / base.w2), q(x.w4 / x.w2, base.w4 / base.w2), q(x.w5ms, base.w5ms), q(x.peakMb, base.peakMb), growth, q(x.heapMb, base.heapMb)]);
  }
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  const line = (row: string[]) => `| ${row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join(" | ")} |`;
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(" ");
  console.log(`peer benchmark: ${N} measured turns per runner and workload (BENCH_TURNS) in batches of ${BATCH}, ${WARMUP_ROUNDS * BATCH} warm-up turns each, runners interleaved`);
  console.log(`W2-W4: median over batches of the mean µs per turn; W5: ${W5_TURNS} concurrent W2 turns in a child process per runner, median of ${W5_ROUNDS} (BENCH_W5_ROUNDS); heap: heapUsed growth keeping ${HEAP_RESULTS} W2 results, after gc, in a child process`);
  console.log(`node ${process.version}, ${cpus().length} cores, load average ${load(loadAtStart)} at start and ${load(loadavg())} at the end, ${inProcessS.toFixed(1)} s in process`);
  console.log(line(table[0]!));
  console.log(`|${widths.map((w, c) => (c === 0 ? "-".repeat(w + 2) : `${"-".repeat(w + 1)}:`)).join("|")}|`);
  for (const row of table.slice(1)) console.log(line(row));
  for (const [name, why] of failed) console.log(`${name} not run: ${why}`);
}
