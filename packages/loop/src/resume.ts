import {
  canonicalJson,
  dataFields,
  type JsonValue,
  type StreamToolCall,
  ValidationError,
} from "@alma-harness/core";
import { type AskDecision, attributed } from "./asks.js";
import type { Continuation } from "./continuation.js";
import { readContinuation } from "./continuation-read.js";
import type { TurnInput } from "./engine.js";
import { CALL_MODEL, type CallProgress, type Next, type RunTools } from "./next.js";

const DECISION_FIELDS = new Set(["allowed", "by", "reason"]);

/** A parked turn ready to go on: its continuation read, and the step it resumes at. */
export interface Resumable {
  readonly continuation: Continuation;
  /** Where the driver goes on: the parked (or interrupted) step's tools, or the next model call. */
  readonly first: Next;
}

/**
 * Reads what a resume is given, before anything runs: the continuation (any version this runtime
 * reads) of this very root, at a boundary the turn can go on from (a park on asks, a step's tools
 * a dead run was running, the next model call; never a finish, whose ending it does not hold); the
 * decisions, each for one of its pending asks and of a closed shape. Anything else is a typed
 * error (`ContinuationError`, `ValidationError`).
 */
export function resumable(
  input: TurnInput,
  raw: unknown,
  decisions: Readonly<Record<string, AskDecision>>,
): Resumable {
  const continuation = readContinuation(raw);
  const { root, next } = continuation;
  const same =
    root.scope.org === input.scope.org &&
    root.scope.uid === input.scope.uid &&
    root.sessionId === input.sessionId &&
    root.rootKey === input.rootKey &&
    root.turnId === input.turnId;
  if (!same)
    throw new ValidationError("continuation.root", "same_root", "another turn's continuation");
  // What bounds the turn (its sensitivity, its tools) is the parked turn's, never a new request's.
  const sameRequest =
    canonicalJson(input.intent as unknown as JsonValue) ===
      canonicalJson(continuation.intent as unknown as JsonValue) &&
    canonicalJson((input.grant ?? null) as JsonValue) ===
      canonicalJson(continuation.grant as JsonValue);
  if (!sameRequest)
    throw new ValidationError(
      "intent",
      "same_request",
      "the resume's intent or grant is not the parked turn's",
    );
  // The session was held by the parked turn: a view that moved since cannot take its messages.
  if (input.revision !== continuation.baseRevision)
    throw new ValidationError("revision", "same_view", "the session's view moved since the park");
  if (next.kind === "finish")
    throw new ValidationError(
      "continuation.next",
      "resumable",
      "a finished turn's boundary is not resumable (its ending is not in the record)",
    );
  if (next.kind === "call_model") {
    if (Object.keys(dataFields(decisions, "decisions")).length > 0)
      throw new ValidationError("decisions", "pending_ask", "the turn is not parked on an ask");
    return { continuation, first: CALL_MODEL };
  }
  const asks = new Set(next.calls.flatMap((c) => (c.state === "asked" ? [c.ask.askId] : [])));
  const decided = readDecisions(decisions, asks);
  const assistant = [...continuation.messages]
    .reverse()
    .find((m) => m.message.role === "assistant");
  const first: RunTools = {
    kind: "run_tools",
    step: next.step,
    calls: next.calls.map(
      (c): StreamToolCall => ({ id: c.id, name: c.name, arguments: c.arguments }),
    ),
    blocks: assistant?.message.blocks ?? [],
    last: next.last ?? undefined,
    progress: next.calls.map((c): CallProgress => {
      if (c.state === "requested") return { state: "requested" };
      if (c.state === "done") return { state: "done", result: c.result };
      const decision = decided.get(c.ask.askId);
      return decision ? { state: "decided", ask: c.ask, decision } : { state: "asked", ask: c.ask };
    }),
  };
  return { continuation, first };
}

/** The decisions, read once as data (no getter runs, a Proxy is refused), each of a closed shape. */
function readDecisions(raw: unknown, asks: ReadonlySet<string>): ReadonlyMap<string, AskDecision> {
  const out = new Map<string, AskDecision>();
  for (const [askId, value] of Object.entries(dataFields(raw, "decisions"))) {
    const path = `decisions.${askId}`;
    if (!asks.has(askId))
      throw new ValidationError(path, "pending_ask", "not a pending ask of this turn");
    const d = dataFields(value, path) as Partial<Record<keyof AskDecision, unknown>>;
    if (Object.keys(d).some((k) => !DECISION_FIELDS.has(k)))
      throw new ValidationError(path, "closed", "a decision is { allowed, by, reason? }");
    if (typeof d.allowed !== "boolean" || (d.by !== "operator" && d.by !== "kernel"))
      throw new ValidationError(path, "decision", "allowed is a boolean, by is operator or kernel");
    if (!attributed(d))
      throw new ValidationError(
        `${path}.reason`,
        "attributed",
        "the reason does not fit who decided",
      );
    const { allowed, by, reason } = d;
    out.set(askId, Object.freeze({ allowed, by, ...(reason !== undefined ? { reason } : {}) }));
  }
  return out;
}
