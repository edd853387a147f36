import {
  type CacheTtl,
  defineTool,
  type ModelChoice,
  type ToolDefinition,
} from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import { memory } from "@alma-harness/runtime";
import type { LocalServer } from "../../../providers/test/helpers/server.js";
import { RUNTIME_TRAIL_KEY } from "../open.js";
import { type Break, breakBetween, prefixOf, toolNames } from "./property.js";
import {
  type Answer,
  type Call,
  clientOf,
  type LoadingOptions,
  modelOf,
  type Shape,
  sseOf,
} from "./wire.js";

/**
 * A 30-turn clinic session (12 tools, 6 deferred) through the composed runtime and a real
 * adapter against the local server: searches that load tools out of registration order, parallel
 * searches and parallel calls, a grant change (and back), a TTL change, and a rotation that keeps
 * one load. Every outgoing body is captured as the server received it.
 */
const NON_DEFERRED = [
  "clinic__hours",
  "clinic__address",
  "clinic__doctors",
  "clinic__services",
  "clinic__book",
  "clinic__cancel",
];
export const DEFERRED = [
  "crm__find_patient",
  "crm__update_patient",
  "lab__order_test",
  "lab__get_results",
  "billing__invoice",
  "billing__refund",
];
const FRONT_DESK = [...NON_DEFERRED, ...DEFERRED.filter((n) => !n.startsWith("billing__"))];

export type Cause = "rotation" | "grant" | "ttl";

interface TurnPlan {
  readonly answers: readonly Answer[];
  readonly profile?: "front";
  readonly ttl?: CacheTtl;
  /** The session is cold at this turn (the clock moves past `coldAfterMs`): the history rotates first. */
  readonly cold?: boolean;
}

const load = (...names: string[]): Call => ({ name: "search_tools", input: { names } });
const call = (name: string): Call => ({ name, input: {} });
const text = (t: string): Answer => ({ text: t });
const calls = (...c: Call[]): Answer => ({ calls: c });

/** The 30 turns; unlisted turns answer with text. */
function plan(): TurnPlan[] {
  const turns: TurnPlan[] = Array.from({ length: 30 }, (_, i) => ({
    answers: [text(`answer ${i + 1}`)],
  }));
  turns[1] = { answers: [calls(load("lab__get_results")), text("loaded")] };
  turns[2] = { answers: [calls(call("lab__get_results")), text("results")] };
  // Registered before lab__get_results, loaded after it.
  turns[4] = {
    answers: [calls(load("crm__find_patient")), calls(call("crm__find_patient")), text("found")],
  };
  // Two searches in one step, then two calls in one step.
  turns[6] = {
    answers: [
      calls(load("billing__refund"), load("crm__update_patient")),
      calls(call("crm__find_patient"), call("lab__get_results")),
      text("both"),
    ],
  };
  turns[11] = { answers: [text("front desk only")], profile: "front" };
  turns[12] = { answers: [calls(call("billing__refund")), text("back to the full grant")] };
  turns[17] = { answers: [text("an hour now")], ttl: "1h" };
  turns[20] = { answers: [calls(call("crm__update_patient")), text("updated")] };
  // The last turn before the rotation loads a tool; the rotation keeps it (its result is in the tail).
  turns[21] = { answers: [calls(load("lab__order_test")), text("order ready")] };
  turns[22] = { answers: [text("after the pause")], cold: true };
  turns[23] = { answers: [calls(load("billing__invoice")), text("invoice ready")] };
  turns[26] = {
    answers: [calls(call("clinic__hours"), call("billing__invoice")), text("two at once")],
  };
  for (let i = 17; i < 30; i += 1)
    turns[i] = { ...turns[i], answers: turns[i]?.answers ?? [], ttl: "1h" };
  return turns;
}

function tools(): ToolDefinition[] {
  const schema = {
    type: "object",
    properties: { note: { type: "string", description: "What to look at." } },
  };
  return [
    ...NON_DEFERRED.map((name) =>
      defineTool({
        name,
        description: `The clinic's ${name.slice(8)}.`,
        input: schema,
        handler: () => ({ ok: name }),
      }),
    ),
    ...DEFERRED.map((name) =>
      defineTool({
        name,
        description: `${name.replace("__", ": ").replace("_", " ")} for a patient.`,
        input: schema,
        deferred: true,
        handler: () => ({ ok: name }),
      }),
    ),
  ];
}

export interface Request {
  readonly turn: number;
  readonly firstOfTurn: boolean;
  readonly causes: readonly Cause[];
  readonly body: unknown;
}

export interface PairReport {
  readonly turn: number;
  readonly break: Break | undefined;
  readonly causes: readonly Cause[];
  /** The next request's tools begin with every tool of the previous one and add some after them. */
  readonly appended: boolean;
}

export interface SessionRun {
  readonly main: readonly Request[];
  readonly pairs: readonly PairReport[];
  readonly volatileLast: boolean;
}

/** Runs the session on `shape` and reports every consecutive pair of main requests. */
export async function runSession(
  shape: Shape,
  server: LocalServer,
  options: LoadingOptions = {},
): Promise<SessionRun> {
  const clock = new ManualClock();
  const turns = plan();
  const model = clientOf(shape, `${server.url}/v1`, options);
  const modelName = modelOf(shape, options);
  let ttl: CacheTtl = "5m";
  const rates = { input: 3, output: 15, cacheRead: 0.3, cacheWrite5m: 3.75, cacheWrite1h: 6 };
  const rt = memory({
    clients: [model],
    policy: {
      resolve: (): ModelChoice => ({
        clientId: model.id,
        model: modelName,
        maxOutputTokens: 512,
        cache: shape === "anthropic" ? { ttl } : false,
      }),
    },
    prompt: "You are the front desk of a clinic.",
    tools: tools(),
    profiles: { front: FRONT_DESK },
    volatile: (ctx) => `Now: ${ctx.now}.`,
    longContext: { rotateAtTokens: 50, keepLastMessages: 4, summaryTier: "fast" },
    prices: { version: "p1", models: { [modelName]: { rates } } },
    policyVersion: "policy-1",
    priceVersion: "p1",
    configRevision: "rev-1",
    resultRetentionMs: 86_400_000,
    runTimeoutMs: 120_000,
    maxCalls: 8,
    maxInputChars: 20_000,
    trailKey: RUNTIME_TRAIL_KEY,
    clock,
  });
  const main: Request[] = [];
  let volatileLast = true;
  let grant = "full";
  for (const [i, turn] of turns.entries()) {
    const causes: Cause[] = [];
    if ((turn.profile ?? "full") !== grant) causes.push("grant");
    grant = turn.profile ?? "full";
    if ((turn.ttl ?? "5m") !== ttl) causes.push("ttl");
    ttl = turn.ttl ?? "5m";
    clock.advance(turn.cold ? 10 * 60_000 : 1_000);
    if (turn.cold) {
      causes.push("rotation");
      server.enqueue({
        body: sseOf(shape, { text: "Summary: a patient's lab order is ready." }, options),
      });
    }
    server.enqueue(...turn.answers.map((answer) => ({ body: sseOf(shape, answer, options) })));
    const seen = server.requests.length;
    const view = await rt.runner.runTurn({
      scope: { org: "clinic-a", uid: "u1" },
      sessionId: "s1",
      idempotencyKey: `k${i + 1}`,
      input: `Question ${i + 1}`,
      intent: { tier: "balanced", sensitivity: "internal" },
      ...(turn.profile ? { toolProfile: turn.profile } : {}),
    });
    if (view.status !== "completed")
      throw new Error(`turn ${i + 1} on ${shape}: ${view.status} ${JSON.stringify(view)}`);
    // Main requests carry tools (search_tools at least); the rotation's summary call carries none.
    const bodies = server.requests
      .slice(seen)
      .map((r) => r.body)
      .filter((b) => toolNames(b).length > 0);
    for (const [k, body] of bodies.entries())
      main.push({ turn: i + 1, firstOfTurn: k === 0, causes: k === 0 ? causes : [], body });
    const last = prefixOf(shape, bodies[0]).segments.at(-1) ?? "";
    if (!last.includes(`Now: ${clock.now()}.`)) volatileLast = false;
  }
  const pairs: PairReport[] = [];
  for (let i = 1; i < main.length; i += 1) {
    const previous = main[i - 1] as Request;
    const next = main[i] as Request;
    const before = toolNames(previous.body);
    const after = toolNames(next.body);
    const appended = after.length > before.length && before.every((n, k) => after[k] === n);
    pairs.push({
      turn: next.turn,
      break: breakBetween(prefixOf(shape, previous.body), prefixOf(shape, next.body)),
      causes: next.causes,
      appended,
    });
  }
  return { main, pairs, volatileLast };
}

/** Counts of a run: breaks at the tools array, of those inside the tools already advertised, and breaks no documented cause explains. */
export function tally(run: SessionRun): {
  pairs: number;
  toolBreaks: number;
  withinAdvertised: number;
  appends: number;
  unexplained: number;
} {
  let toolBreaks = 0;
  let withinAdvertised = 0;
  let appends = 0;
  let unexplained = 0;
  for (const pair of run.pairs) {
    if (!pair.break) continue;
    if (pair.break.region === "tools") toolBreaks += 1;
    if (pair.break.withinAdvertised) withinAdvertised += 1;
    const explained = pair.causes.length > 0;
    const append = pair.appended && pair.break.region === "tools" && !pair.break.withinAdvertised;
    if (append && !explained) appends += 1;
    if (!explained && !append) unexplained += 1;
  }
  return { pairs: run.pairs.length, toolBreaks, withinAdvertised, appends, unexplained };
}
