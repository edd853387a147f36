import {
  MODEL_SPECIFICATION_VERSION,
  type ModelChoice,
  resolveTrailKey,
  type TrailKey,
  type ModelClient,
  type ProviderToolSpec,
  SEARCH_TOOLS_NAME,
  type ToolDefinition,
  type ToolSpec,
  toolSpec,
} from "@alma-harness/core";
import type { TurnAccount } from "@alma-harness/execution";
import type { AskDecision } from "./asks.js";
import { AbortedError, startTimer } from "./cancel.js";
import type { ContinuationWriter } from "./continuation.js";
import type { EngineConfig, TurnInput, TurnOutcome } from "./engine.js";
import type { CompiledEngine, TurnEnv } from "./env.js";
import { grantOf } from "./grant.js";
import { turnRecorder } from "./recorder.js";
import { EngineConfigError } from "./errors.js";
import { normalizeTurnInput, resolveMainChoice } from "./input.js";
import { resolveLimits } from "./limits.js";
import { resolveLongContext } from "./long-context.js";
import { TurnState } from "./state.js";
import { type StreamedTurn, streamFrom } from "./stream-turn.js";
import { resumable } from "./resume.js";
import { resumeTurnCore, runTurnCore } from "./turn.js";
import { compileMedia } from "./media.js";
import { compileExtraction } from "./extraction-config.js";
import { compileRecall } from "./recall.js";
import { turnTrail } from "./trail.js";

export const MAX_TERMINAL_TOOLS = 64;

export interface Engine {
  /**
   * Runs one turn to its single outcome. Rejects only for invalid input (before anything runs);
   * a turn's own failure is data: `reconciliation_required`, or `not_admitted` for a refused route.
   */
  runTurn(input: TurnInput): Promise<TurnOutcome>;
  /** The same turn, observed: settled main-step text and metadata, and the identical outcome on `.result`. */
  streamTurn(input: TurnInput): StreamedTurn;
  /**
   * Goes on with a turn parked on permission asks (`awaiting_approval`): `input` names the same
   * root (a new run: its own deadline, signal, admission), `continuation` is what the park
   * returned (as stored; read again here), `decisions` the answers by ask id. The decided calls
   * run (or answer as denied), then the rest of the step, then the turn goes on; no settled model
   * call and no call that already ran runs again. An ask without a decision parks it again.
   */
  resumeTurn(
    input: TurnInput,
    continuation: unknown,
    decisions: Readonly<Record<string, AskDecision>>,
  ): Promise<TurnOutcome>;
}

function compileClients(config: EngineConfig): Map<string, ModelClient> {
  const clients = new Map<string, ModelClient>();
  if (!Array.isArray(config.clients))
    throw new EngineConfigError("clients must be an array of ModelClients");
  for (const client of config.clients) {
    if (
      !client ||
      typeof client.stream !== "function" ||
      typeof client.validate !== "function" ||
      typeof client.id !== "string"
    ) {
      throw new EngineConfigError("every client must be a ModelClient");
    }
    const version: unknown = client.specificationVersion;
    if (version !== undefined && version !== MODEL_SPECIFICATION_VERSION) {
      throw new EngineConfigError(
        `client "${client.id}" implements ${String(version)}, not ${MODEL_SPECIFICATION_VERSION}`,
      );
    }
    if (clients.has(client.id))
      throw new EngineConfigError(`two clients have the id "${client.id}"`);
    clients.set(client.id, client);
  }
  if (clients.size === 0) throw new EngineConfigError("at least one model client is required");
  return clients;
}

function compileTools(config: EngineConfig): {
  tools: Map<string, ToolDefinition>;
  specs: Map<string, ToolSpec>;
  terminal: Set<string>;
} {
  const tools = new Map<string, ToolDefinition>();
  const specs = new Map<string, ToolSpec>();
  for (const tool of config.tools ?? []) {
    if (!tool || typeof tool.handler !== "function" || !tool.validator) {
      throw new EngineConfigError(
        `tool "${String(tool?.name)}" is not a defineTool() result or its handler is not a function`,
      );
    }
    if (tool.name === SEARCH_TOOLS_NAME)
      throw new EngineConfigError(`tool "${tool.name}" is reserved`);
    if (tools.has(tool.name))
      throw new EngineConfigError(`tool "${tool.name}" is registered twice`);
    tools.set(tool.name, tool);
    // Compiled once per registration: steps never convert schemas again.
    specs.set(tool.name, Object.freeze(toolSpec(tool)));
  }
  if (config.terminalTools !== undefined && !Array.isArray(config.terminalTools))
    throw new EngineConfigError("terminalTools must be an array of tool names");
  const terminal = new Set(config.terminalTools ?? []);
  if (terminal.size > MAX_TERMINAL_TOOLS)
    throw new EngineConfigError(`at most ${MAX_TERMINAL_TOOLS} terminal tools`);
  for (const name of terminal) {
    if (name === SEARCH_TOOLS_NAME)
      throw new EngineConfigError("search_tools cannot be a terminal tool");
    if (!tools.has(name)) throw new EngineConfigError(`terminal tool "${name}" is not registered`);
  }
  return { tools, specs, terminal };
}

function compileProviderTools(config: EngineConfig): readonly ProviderToolSpec[] {
  const kinds = new Set<string>();
  for (const spec of config.providerTools ?? []) {
    if (spec?.kind !== "web_search")
      throw new EngineConfigError("provider tools must come from defineProviderTool()");
    if (kinds.has(spec.kind))
      throw new EngineConfigError(`provider tool "${spec.kind}" is registered twice`);
    kinds.add(spec.kind);
  }
  return Object.freeze([...(config.providerTools ?? [])]);
}

function compile(config: EngineConfig): CompiledEngine {
  if (!config || typeof config !== "object")
    throw new EngineConfigError("an engine needs a configuration");
  const clients = compileClients(config);
  if (!config.policy || typeof config.policy.resolve !== "function")
    throw new EngineConfigError("policy.resolve must be a function");
  if (!config.calls || !config.audit || !config.clock || !config.ids)
    throw new EngineConfigError("calls, audit, clock and ids are required");
  const { tools, specs, terminal } = compileTools(config);
  if (config.system !== undefined && typeof config.system !== "string")
    throw new EngineConfigError("system must be a string");
  if (config.volatile !== undefined && typeof config.volatile !== "function")
    throw new EngineConfigError("volatile must be a function");
  if (config.sink !== undefined && typeof config.sink !== "function")
    throw new EngineConfigError("sink must be a function");
  const guard: unknown = config.cacheHygiene;
  if (
    guard !== undefined &&
    (typeof guard !== "object" ||
      guard === null ||
      typeof (guard as { observe?: unknown }).observe !== "function")
  ) {
    throw new EngineConfigError("cacheHygiene must be a cacheHygieneGuard()");
  }
  if (
    config.releasePreStreamRejections !== undefined &&
    typeof config.releasePreStreamRejections !== "boolean"
  ) {
    throw new EngineConfigError("releasePreStreamRejections must be a boolean");
  }
  const volatileSystem = config.volatileSystem ?? [];
  if (!Array.isArray(volatileSystem) || volatileSystem.some((t) => typeof t !== "string"))
    throw new EngineConfigError("volatileSystem must be an array of strings");
  return {
    clients,
    policy: config.policy,
    tools,
    toolOrder: Object.freeze([...tools.values()]),
    specs,
    providerTools: compileProviderTools(config),
    terminalTools: terminal,
    system: config.system,
    volatileSystem: Object.freeze([...volatileSystem]),
    volatile: config.volatile,
    hooks: Object.freeze({ ...(config.hooks ?? {}) }),
    permissions: config.permissions,
    limits: resolveLimits(config.limits),
    longContext: resolveLongContext(config.longContext),
    media: compileMedia(config.media),
    recall: compileRecall(config.recall),
    extraction: compileExtraction(config.extraction),
    releasePreStreamRejections: config.releasePreStreamRejections ?? false,
    calls: config.calls,
    audit: config.audit,
    trailKey: compileTrailKey(config),
    barrier: config.barrier,
    clock: config.clock,
    ids: config.ids,
    sink: config.sink,
    cacheHygiene: config.cacheHygiene,
    continuations: compileContinuations(config),
    park: compileAsks(config.asks),
  };
}

function compileAsks(asks: unknown): boolean {
  if (asks === undefined || asks === "wait") return false;
  if (asks === "park") return true;
  throw new EngineConfigError('asks must be "wait" or "park"');
}

function compileContinuations(config: EngineConfig): ContinuationWriter | undefined {
  const writer: unknown = config.continuations;
  if (writer === undefined) return undefined;
  if (
    typeof writer !== "object" ||
    writer === null ||
    typeof (writer as { write?: unknown }).write !== "function"
  )
    throw new EngineConfigError("continuations must be an object with a write(continuation)");
  return writer as ContinuationWriter;
}

function compileTrailKey(config: EngineConfig): TrailKey {
  try {
    return resolveTrailKey(config.trailKey);
  } catch (error) {
    throw new EngineConfigError((error as Error).message);
  }
}

/** Builds the turn engine. Bad configuration throws `EngineConfigError` here, naming what is wrong. */
export function createEngine(config: EngineConfig): Engine {
  const engine = compile(config);
  const runTurn = async (raw: TurnInput): Promise<TurnOutcome> => {
    const input = normalizeTurnInput(engine, raw);
    let choice: ModelChoice;
    try {
      choice = resolveMainChoice(engine, input);
    } catch (error) {
      return { status: "not_admitted", reason: (error as Error)?.message ?? "routing refused" };
    }
    return await openRun(engine, input, engine.calls.account(), (env, state) =>
      runTurnCore(env, state, choice),
    );
  };
  const resumeTurn = async (
    raw: TurnInput,
    continuation: unknown,
    decisions: Readonly<Record<string, AskDecision>>,
  ): Promise<TurnOutcome> => {
    const input = normalizeTurnInput(engine, raw);
    const { continuation: c, first } = resumable(input, continuation, decisions);
    // The turn keeps the route it was admitted with; a client gone since is a refusal.
    if (!engine.clients.has(c.choice.clientId))
      return { status: "not_admitted", reason: `no client "${c.choice.clientId}"` };
    return await openRun(engine, input, engine.calls.account(c.reservations), (env, state) => {
      state.restore(c);
      return resumeTurnCore(env, state, c.choice, first);
    });
  };
  return {
    runTurn,
    resumeTurn,
    streamTurn: (input) => streamFrom(input, runTurn),
  };
}

/** One run of a turn: its signal (the caller's, the deadline), its grant, recorder and state. */
async function openRun(
  engine: CompiledEngine,
  input: TurnInput,
  account: TurnAccount,
  run: (env: TurnEnv, state: TurnState) => Promise<TurnOutcome>,
): Promise<TurnOutcome> {
  const control = new AbortController();
  const stopDeadline = watchDeadline(engine, input, control);
  const onAbort = () => control.abort(input.signal?.reason);
  input.signal?.addEventListener("abort", onAbort, { once: true });
  if (input.signal?.aborted) control.abort(input.signal.reason);
  const env: TurnEnv = {
    engine,
    input,
    signal: control.signal,
    grant: grantOf(engine, input.grant),
    limits:
      input.maxCalls === undefined ? engine.limits : { ...engine.limits, maxCalls: input.maxCalls },
    rec: turnRecorder({
      turnId: input.turnId,
      trail: turnTrail(engine.trailKey, input.scope, input.sessionId, input.turnId),
      audit: engine.audit,
      clock: engine.clock,
      barrier: engine.barrier,
      sinks: [engine.sink, input.sink],
    }),
  };
  const now = () => engine.clock.now();
  const state = new TurnState(
    input.turnId,
    input.history,
    input.revision,
    env.rec.emit,
    now,
    account,
  );
  try {
    return await run(env, state);
  } finally {
    stopDeadline?.();
    input.signal?.removeEventListener("abort", onAbort);
  }
}

/** Aborts the turn when its deadline passes, on the engine's clock; returns the timer's cancel. */
function watchDeadline(
  engine: CompiledEngine,
  input: TurnInput,
  control: AbortController,
): (() => void) | undefined {
  if (input.deadlineAt === undefined) return undefined;
  const wait = Math.max(0, input.deadlineAt - engine.clock.now());
  return startTimer(engine.clock, wait, () => control.abort(new AbortedError("deadline")));
}
