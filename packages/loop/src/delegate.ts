import {
  type DelegateAttempt,
  type DelegateCompleted,
  type DelegateRefusalReason,
  type DelegateRefused,
  type DelegateRequest,
  type DirectRequest,
  isSensitivity,
  isTier,
  type ModelGateways,
  SEARCH_TOOLS_NAME,
  type Sensitivity,
  sensitivityRank,
  snapshot,
  type ToolContext,
  type ToolDefinition,
  type Usage,
  ValidationError,
} from "@alma-harness/core";
import { CallRefusedError } from "@alma-harness/execution";
import { effectKey } from "./asks.js";
import { linkedController } from "./cancel.js";
import { type ChildRequest, runChild } from "./child.js";
import { DelegationRefusedError, UncertainTurnError } from "./errors.js";
import type { ToolRun } from "./tool-run.js";

const refusals = new WeakSet<object>();
const MAX_PROMPT = 1_000_000;
const DIRECT_FIELDS = ["tier", "sensitivity", "prompt", "system", "maxOutputTokens"] as const;
const DELEGATE_FIELDS = ["tier", "sensitivity", "prompt", "system", "tools", "maxSteps"] as const;

function refusal(reason: DelegateRefusalReason): DelegateRefused {
  const value = Object.freeze({ status: "refused" as const, reason });
  refusals.add(value);
  return value;
}

/** True only for the exact frozen refusal object a gateway returned; a clone is ordinary output. */
export function isExactRefusal(value: unknown): value is DelegateRefused {
  return typeof value === "object" && value !== null && refusals.has(value);
}

/**
 * Snapshots a child request before routing: plain data, closed fields, valid tier and sensitivity,
 * a prompt of 1–1,000,000 UTF-16 units, at most 256 tool names of 1–200 units. Throws `ValidationError`.
 */
export function snapshotRequest(
  raw: unknown,
  allowed: readonly string[],
  path: string,
): ChildRequest {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw))
    throw new ValidationError(path, "object", `${path} must be an object`);
  const copy = snapshot(raw) as Record<string, unknown>;
  for (const key of Object.keys(copy))
    if (!allowed.includes(key))
      throw new ValidationError(`${path}.${key}`, "unknown_field", `${path}.${key} is not allowed`);
  if (!isTier(copy.tier))
    throw new ValidationError(`${path}.tier`, "closed", `${path}.tier is not a tier`);
  if (!isSensitivity(copy.sensitivity))
    throw new ValidationError(
      `${path}.sensitivity`,
      "closed",
      `${path}.sensitivity is not a sensitivity`,
    );
  if (
    typeof copy.prompt !== "string" ||
    copy.prompt.length === 0 ||
    copy.prompt.length > MAX_PROMPT
  ) {
    throw new ValidationError(
      `${path}.prompt`,
      "string_1_1000000",
      `${path}.prompt must be 1-1,000,000 UTF-16 units`,
    );
  }
  if (copy.system !== undefined && typeof copy.system !== "string")
    throw new ValidationError(`${path}.system`, "string", `${path}.system must be a string`);
  const tools = copy.tools;
  if (
    tools !== undefined &&
    (!Array.isArray(tools) ||
      tools.length > 256 ||
      tools.some((t) => typeof t !== "string" || t.length < 1 || t.length > 200))
  ) {
    throw new ValidationError(
      `${path}.tools`,
      "names_256",
      `${path}.tools must be at most 256 names of 1-200 units`,
    );
  }
  for (const key of ["maxSteps", "maxOutputTokens"]) {
    const v = copy[key];
    if (
      v !== undefined &&
      (!Number.isSafeInteger(v) || (v as number) < 1 || (v as number) > 1_000_000)
    ) {
      throw new ValidationError(
        `${path}.${key}`,
        "range",
        `${path}.${key} must be a positive integer`,
      );
    }
  }
  return copy as unknown as ChildRequest;
}

/** Where a handler runs: its call, its nesting, the grant and sensitivity its children may not exceed. */
export interface GatewayScope {
  readonly callId: string;
  readonly depth: number;
  readonly grant: ReadonlyMap<string, ToolDefinition>;
  readonly sensitivity: Sensitivity;
  readonly signal: AbortSignal;
}

export interface HandlerGateways {
  context(toolName: string): ToolContext;
  /**
   * Ends the handler's right to start children. Children still running are aborted; unless the
   * handler itself failed, one still running (started, not awaited) or one that failed (even if
   * the handler swallowed it) throws `UncertainTurnError`.
   */
  revoke(handlerFailed: boolean): void;
  /** The first child failure, if any. */
  failureCause(): UncertainTurnError | undefined;
}

/** Refusals and invalid requests stop a child before it starts: they poison nothing. */
function startsNothing(error: unknown): boolean {
  return (
    error instanceof DelegationRefusedError ||
    error instanceof ValidationError ||
    error instanceof CallRefusedError
  );
}

/**
 * The children one live handler started: tracked while they run, their first failure kept (a
 * failure the handler swallowed still poisons the turn), their signal linked on the first child.
 */
class HandlerChildren {
  live = true;
  readonly pending = new Set<Promise<unknown>>();
  poison: UncertainTurnError | undefined;
  // Linked on the first child: a handler that starts none costs no controller.
  link: ReturnType<typeof linkedController> | undefined;

  constructor(private readonly parent: AbortSignal) {}

  signal(): AbortSignal {
    this.link ??= linkedController(this.parent);
    return this.link.controller.signal;
  }

  track<T>(work: Promise<T>): Promise<T> {
    const p = work.catch((error: unknown) => {
      if (!startsNothing(error))
        this.poison ??=
          error instanceof UncertainTurnError
            ? error
            : new UncertainTurnError("child", "a child call failed", error);
      throw error;
    });
    this.pending.add(p);
    const done = () => this.pending.delete(p);
    p.then(done, done);
    return p;
  }

  alive(): void {
    if (!this.live)
      throw new UncertainTurnError("child", "the gateways were revoked when the handler settled");
  }

  revoke(handlerFailed: boolean): void {
    this.live = false;
    const running = this.pending.size > 0;
    const pending = () =>
      new UncertainTurnError("children_pending", "a child call was started and not awaited");
    if (running) this.link?.controller.abort(pending());
    this.link?.dispose();
    if (handlerFailed) return;
    if (running) throw pending();
    if (this.poison) throw this.poison;
  }
}

/** Why a child request is refused before it starts (depth, sensitivity, a tool outside the grant). */
function structuralRefusal(
  maxDepth: number,
  at: GatewayScope,
  req: ChildRequest,
  delegate: boolean,
): DelegateRefusalReason | undefined {
  if (delegate && at.depth + 1 > maxDepth) return "depth";
  if (sensitivityRank(req.sensitivity) > sensitivityRank(at.sensitivity)) return "sensitivity";
  if (delegate)
    for (const name of req.tools ?? [])
      if (name === SEARCH_TOOLS_NAME || !at.grant.has(name)) return "tool_grant";
  return undefined;
}

/**
 * Opens the model gateways for one live handler. Children share the root's call limit, ledger
 * (caps) and deadline; sensitivity only narrows from the handler's caller; a delegate gets at most
 * the caller's tools, never search or provider tools; depth is bounded.
 */
export function openGateways(run: ToolRun, at: GatewayScope): HandlerGateways {
  const children = new HandlerChildren(at.signal);
  const models = modelGateways(run, at, children);
  return {
    context: (toolName) =>
      Object.freeze({
        turnId: run.rec.turnId,
        callId: at.callId,
        sessionId: run.sessionId,
        toolName,
        effectKey: effectKey(run.rec.turnId, at.callId),
        facts: run.facts ?? Object.freeze({}),
        signal: at.signal,
        depth: at.depth,
        now: run.rec.now,
        models,
      }),
    revoke: (handlerFailed) => children.revoke(handlerFailed),
    failureCause: () => children.poison,
  };
}

function modelGateways(run: ToolRun, at: GatewayScope, children: HandlerChildren): ModelGateways {
  const maxDepth = run.limits.maxDelegateDepth;
  const child = (req: ChildRequest, kind: "direct" | "delegate") =>
    children.track(
      runChild(run, req, {
        kind,
        parentCallId: at.callId,
        depth: at.depth,
        grant: at.grant,
        signal: children.signal(),
      }),
    );
  return Object.freeze({
    direct: async (
      raw: DirectRequest,
    ): Promise<{ readonly text: string; readonly usage: Usage }> => {
      children.alive();
      if (raw && typeof raw === "object" && Object.hasOwn(raw, "toolChoice"))
        throw new ValidationError(
          "direct.toolChoice",
          "unsupported",
          "models.direct is tool-free: toolChoice is rejected",
        );
      const req = snapshotRequest(raw, DIRECT_FIELDS, "direct");
      const reason = structuralRefusal(maxDepth, at, req, false);
      if (reason) throw new DelegationRefusedError(reason);
      const done = await child(req, "direct");
      return { text: done.text, usage: done.usage };
    },
    delegate: async (raw: DelegateRequest): Promise<DelegateCompleted> => {
      children.alive();
      const req = snapshotRequest(raw, DELEGATE_FIELDS, "delegate");
      const reason = structuralRefusal(maxDepth, at, req, true);
      if (reason) throw new DelegationRefusedError(reason);
      return child(req, "delegate");
    },
    tryDelegate: async (raw: DelegateRequest): Promise<DelegateAttempt> => {
      children.alive();
      const req = snapshotRequest(raw, DELEGATE_FIELDS, "delegate");
      const reason = structuralRefusal(maxDepth, at, req, true);
      if (reason) return refusal(reason);
      return child(req, "delegate");
    },
  });
}
