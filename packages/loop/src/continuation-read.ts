import {
  BUDGET_CAP_NAMES,
  CALL_KINDS,
  type JsonObject,
  type ModelChoice,
  type Msg,
  normalizeIntent,
  normalizeModelChoice,
  normalizeScope,
  type RoutingIntent,
  snapshot,
  type UncertainCause,
  validateId,
} from "@alma-harness/core";
import {
  closedObject,
  normalizeCostReceipt,
  normalizeMessages,
  validateCount,
  validateOneOf,
} from "@alma-harness/core/stores";
import {
  CONTINUATION_LIMITS,
  CONTINUATION_VERSION,
  CONTINUATION_VERSIONS,
  type Continuation,
  type ContinuationCall,
  type ContinuationCounters,
  ContinuationError,
  type ContinuationMessage,
  type ContinuationNext,
  type PendingAsk,
} from "./continuation.js";
import { digestOf } from "./continuation-refs.js";
import { TERMINAL_REASONS, type TurnCallFailure, type TurnToolCall } from "./result.js";

const TOP = [
  "version",
  "root",
  "intent",
  "grant",
  "choice",
  "step",
  "next",
  "baseRevision",
  "rotated",
  "messages",
  "counters",
  "callIds",
  "reservations",
  "grants",
  "toolCalls",
  "warnings",
  "warned",
  "failures",
] as const;
const COUNTERS = [
  "callsUsed",
  "operations",
  "requestedToolCalls",
  "modelTokens",
  "webSearches",
] as const;

/** A stored turn output as a store returns it: the digest and the message as stored. */
export interface StoredOutput {
  readonly digest: string;
  readonly message: unknown;
}

/** Records this reader returned: handed back (to the engine), they are not read twice. */
const READ = new WeakSet<object>();

/**
 * Reads a stored continuation of any version this runtime knows, as the current shape (its
 * messages whole): bounded plain JSON, closed at every level, each field checked. A version-2
 * record's references are resolved against `outputs` (the turn's stored outputs), each message
 * checked against its digest. Anything else is a `ContinuationError` naming where; nothing of a
 * refused record is used. A record this reader returned reads as itself.
 */
export function readContinuation(
  raw: unknown,
  outputs: readonly StoredOutput[] = [],
): Continuation {
  if (typeof raw === "object" && raw !== null && READ.has(raw)) return raw as Continuation;
  let copy: JsonObject;
  try {
    copy = snapshot(raw, CONTINUATION_LIMITS) as JsonObject;
    const top = closedObject("continuation", copy, TOP);
    if (typeof top.version !== "number" || !CONTINUATION_VERSIONS.includes(top.version)) {
      throw new ContinuationError(
        "continuation.version",
        `version ${String(top.version)} is unknown`,
      );
    }
    const read = Object.freeze(readRecord(top, messageReader(top.version, outputs)));
    READ.add(read);
    return read;
  } catch (error) {
    if (error instanceof ContinuationError) throw error;
    const path = (error as { path?: unknown }).path;
    throw new ContinuationError(
      typeof path === "string" ? path : "continuation",
      (error as Error)?.message ?? "unreadable",
      error,
    );
  }
}

type MessageReader = (path: string, entry: unknown) => ContinuationMessage;

/**
 * How a version's messages read: whole (`inline`, both versions) or, from version 2, by reference
 * to a stored output whose message has the digest named.
 */
function messageReader(version: number, outputs: readonly StoredOutput[]): MessageReader {
  let byDigest: Map<string, unknown> | undefined;
  return (path, entry) => {
    const ref = (entry as { ref?: unknown } | null)?.ref;
    validateOneOf(`${path}.ref`, ref, version < 2 ? ["inline"] : ["inline", "output"]);
    if (ref === "inline") {
      const m = closedObject(path, entry, ["ref", "message"]);
      return { ref: "inline", message: normalizeMessages([m.message])[0] as Msg };
    }
    const { digest } = closedObject(path, entry, ["ref", "digest"]);
    byDigest ??= new Map(outputs.map((o) => [o.digest, o.message]));
    const message = typeof digest === "string" ? byDigest.get(digest) : undefined;
    if (message === undefined)
      throw new ContinuationError(`${path}.digest`, "no stored output of the turn has this digest");
    if (digestOf(snapshot(message, CONTINUATION_LIMITS)) !== digest)
      throw new ContinuationError(`${path}.digest`, "the stored output does not match its digest");
    return { ref: "inline", message: normalizeMessages([message])[0] as Msg };
  };
}

function readRecord(top: Record<string, unknown>, readMessage: MessageReader): Continuation {
  const root = closedObject("continuation.root", top.root, [
    "scope",
    "sessionId",
    "rootKey",
    "turnId",
  ]);
  const messages = list("continuation.messages", top.messages).map((entry, i) =>
    readMessage(`continuation.messages[${i}]`, entry),
  );
  const counters = closedObject("continuation.counters", top.counters, COUNTERS);
  for (const k of COUNTERS) validateCount(`continuation.counters.${k}`, counters[k]);
  const money = closedObject("continuation.reservations", top.reservations, [
    "spentMicros",
    "calls",
    "unsettled",
    "receipts",
    "warned",
  ]);
  if (typeof top.rotated !== "boolean")
    throw new ContinuationError("continuation.rotated", "must be a boolean");
  return {
    version: CONTINUATION_VERSION,
    root: {
      scope: normalizeScope(root.scope),
      sessionId: validateId("continuation.root.sessionId", root.sessionId),
      rootKey: validateId("continuation.root.rootKey", root.rootKey),
      turnId: validateId("continuation.root.turnId", root.turnId),
    },
    intent: readIntent(top.intent),
    grant: top.grant === null ? null : strings("continuation.grant", top.grant),
    choice: readChoice(top.choice),
    step: validateCount("continuation.step", top.step),
    next: readNext(top.next),
    baseRevision: validateCount("continuation.baseRevision", top.baseRevision),
    rotated: top.rotated,
    messages,
    counters: counters as unknown as ContinuationCounters,
    callIds: strings("continuation.callIds", top.callIds),
    reservations: {
      spentMicros: validateCount("continuation.reservations.spentMicros", money.spentMicros),
      calls: validateCount("continuation.reservations.calls", money.calls),
      unsettled: strings("continuation.reservations.unsettled", money.unsettled),
      receipts: list("continuation.reservations.receipts", money.receipts).map((r) =>
        normalizeCostReceipt(r),
      ),
      warned: list("continuation.reservations.warned", money.warned).map((w, i) =>
        validateOneOf(`continuation.reservations.warned[${i}]`, w, BUDGET_CAP_NAMES),
      ),
    },
    grants: strings("continuation.grants", top.grants),
    toolCalls: list("continuation.toolCalls", top.toolCalls).map(readToolCall),
    warnings: strings("continuation.warnings", top.warnings),
    warned: strings("continuation.warned", top.warned),
    failures: list("continuation.failures", top.failures).map(readFailure),
  };
}

function readNext(value: unknown): ContinuationNext {
  const path = "continuation.next";
  const kind = (value as { kind?: unknown } | null)?.kind;
  if (kind === "call_model") {
    closedObject(path, value, ["kind"]);
    return { kind };
  }
  if (kind === "finish") {
    const next = closedObject(path, value, ["kind", "terminalReason"]);
    return {
      kind,
      terminalReason: validateOneOf(
        `${path}.terminalReason`,
        next.terminalReason,
        TERMINAL_REASONS,
      ),
    };
  }
  const next = closedObject(path, value, ["kind", "step", "last", "calls"]);
  validateOneOf(`${path}.kind`, next.kind, ["run_tools"]);
  const last =
    next.last === null ? null : validateOneOf(`${path}.last`, next.last, ["call", "step", "time"]);
  const calls = list(`${path}.calls`, next.calls).map((entry, i) =>
    readCall(`${path}.calls[${i}]`, entry),
  );
  if (calls.length === 0) throw new ContinuationError(`${path}.calls`, "a tool step has calls");
  return { kind: "run_tools", step: validateCount(`${path}.step`, next.step, 1), last, calls };
}

const CALL_FIELDS = ["id", "name", "arguments", "state", "ask", "result"];

function readCall(path: string, entry: unknown): ContinuationCall {
  const c = closedObject(path, entry, CALL_FIELDS);
  const state = validateOneOf(`${path}.state`, c.state, ["requested", "asked", "done"]);
  const base = {
    id: text(`${path}.id`, c.id),
    name: text(`${path}.name`, c.name),
    arguments: text(`${path}.arguments`, c.arguments, true),
  };
  if (state === "requested") {
    if (c.ask !== undefined || c.result !== undefined)
      throw new ContinuationError(path, "a requested call has no ask and no result");
    return { ...base, state };
  }
  if (state === "asked") {
    if (c.result !== undefined) throw new ContinuationError(`${path}.result`, "an ask has none");
    return { ...base, state, ask: readAsk(`${path}.ask`, c.ask, base.id) };
  }
  if (c.ask !== undefined) throw new ContinuationError(`${path}.ask`, "a done call has none");
  const [block] = normalizeMessages([{ role: "user", blocks: [c.result] }])[0]?.blocks ?? [];
  if (block?.type !== "tool_result" || block.callId !== base.id)
    throw new ContinuationError(`${path}.result`, "must be this call's tool result");
  return { ...base, state, result: block };
}

function readAsk(path: string, value: unknown, callId: string): PendingAsk {
  const a = closedObject(path, value, ["askId", "callId", "tool", "digest", "action"]);
  if (a.callId !== callId) throw new ContinuationError(`${path}.callId`, "must be the call's id");
  const digest = text(`${path}.digest`, a.digest);
  if (!/^[0-9a-f]{64}$/.test(digest))
    throw new ContinuationError(`${path}.digest`, "must be a SHA-256 in hex");
  return {
    askId: validateId(`${path}.askId`, a.askId),
    callId,
    tool: text(`${path}.tool`, a.tool),
    digest,
    action: text(`${path}.action`, a.action),
  };
}

function readIntent(value: unknown): RoutingIntent {
  try {
    return normalizeIntent(value);
  } catch (error) {
    throw new ContinuationError("continuation.intent", (error as Error).message, error);
  }
}

function readChoice(value: unknown): ModelChoice {
  try {
    return normalizeModelChoice(value);
  } catch (error) {
    throw new ContinuationError("continuation.choice", (error as Error).message, error);
  }
}

function readToolCall(value: unknown, i: number): TurnToolCall {
  const path = `continuation.toolCalls[${i}]`;
  const c = closedObject(path, value, ["id", "name", "input", "isError"]);
  const input = c.input;
  if (input === null || typeof input !== "object" || Array.isArray(input))
    throw new ContinuationError(`${path}.input`, "must be an object");
  if (typeof c.isError !== "boolean")
    throw new ContinuationError(`${path}.isError`, "must be a boolean");
  return {
    id: text(`${path}.id`, c.id),
    name: text(`${path}.name`, c.name),
    input: input as JsonObject,
    isError: c.isError,
  };
}

function readFailure(value: unknown, i: number): TurnCallFailure {
  const path = `continuation.failures[${i}]`;
  const f = closedObject(path, value, ["kind", "cause"]);
  return {
    kind: validateOneOf(`${path}.kind`, f.kind, CALL_KINDS),
    cause: text(`${path}.cause`, f.cause) as UncertainCause,
  };
}

function list(path: string, value: unknown): readonly unknown[] {
  if (!Array.isArray(value)) throw new ContinuationError(path, "must be an array");
  return value;
}

function text(path: string, value: unknown, empty = false): string {
  if (typeof value !== "string" || (!empty && value.length === 0))
    throw new ContinuationError(path, empty ? "must be a string" : "must be a non-empty string");
  return value;
}

function strings(path: string, value: unknown): readonly string[] {
  return list(path, value).map((v, i) => text(`${path}[${i}]`, v));
}
