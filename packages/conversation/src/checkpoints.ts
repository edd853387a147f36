import type { JsonValue, ParkedTurnStore } from "@alma-harness/core";
import type { Continuation, ContinuationWriter } from "@alma-harness/loop";
import type { ResolvedConfig } from "./config.js";
import type { ParkedRecord, ParkedRequest } from "./parking.js";
import type { TurnRef } from "./uncertain.js";

/** The request a parked (or checkpointed) turn keeps beside the loop's record. */
export function parkedRequestOf(s: ParkedRequest): ParkedRequest {
  const { binding, intent, maxCalls, trigger, toolProfile } = s;
  return {
    binding,
    intent,
    maxCalls,
    ...(trigger ? { trigger } : {}),
    ...(toolProfile ? { toolProfile } : {}),
  };
}

/**
 * A run's continuation writer (issue 25): at each step boundary it can go on from, the turn's
 * record goes to the parked-turn store under the run's admission (`checkpoint`, fenced like every
 * write of the turn; with grouped commits, in the transaction of that step's settlement and trail
 * records). A finish is not written (its ending is not in the record, nothing resumes from it),
 * nor a park (`park` stores it, with its asks). A process that dies mid-turn leaves its last
 * boundary: once the run's deadline passes, the maintenance tick claims it and goes on
 * (`resume.ts`). A write that fails ends the turn uncertain (cause `continuation`).
 */
export class Checkpoints implements ContinuationWriter {
  /** Whether a record was written (the run removes it when it ends). */
  wrote = false;

  constructor(
    private readonly config: ResolvedConfig,
    private readonly parked: ParkedTurnStore,
    private readonly request: ParkedRequest,
    private readonly turn: TurnRef,
  ) {}

  async write(c: Continuation): Promise<void> {
    const { next } = c;
    if (next.kind === "finish") return;
    if (next.kind === "run_tools" && next.calls.some((call) => call.state === "asked")) return;
    const record: ParkedRecord = {
      v: 1,
      request: parkedRequestOf(this.request),
      loop: c as unknown as JsonValue,
    };
    await this.parked.checkpoint({
      scope: this.turn.scope,
      sessionId: this.turn.sessionId,
      rootKey: this.turn.rootKey,
      admissionId: this.turn.admissionId,
      continuation: record as unknown as JsonValue,
      now: this.config.clock.now(),
    });
    this.wrote = true;
  }
}
