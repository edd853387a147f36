import type { JsonValue, ParkedTurnStore, TurnOutput } from "@alma-harness/core";
import { type Continuation, type ContinuationWriter, referToOutputs } from "@alma-harness/loop";
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
 * What a park or a checkpoint stores: the runner's record (the request and the loop's record, whose
 * messages refer to the turn's outputs) and the outputs the store does not hold yet (`held`).
 */
export function storedRecord(
  request: ParkedRequest,
  c: Continuation,
  held: ReadonlySet<string>,
): { readonly continuation: JsonValue; readonly outputs: readonly TurnOutput[] } {
  const { record, outputs } = referToOutputs(c, held);
  const parked: ParkedRecord = {
    v: 1,
    request: parkedRequestOf(request),
    loop: record as unknown as JsonValue,
  };
  return {
    continuation: parked as unknown as JsonValue,
    outputs: outputs as unknown as readonly TurnOutput[],
  };
}

/**
 * A run's continuation writer (issue 25): at each step boundary it can go on from, the turn's
 * record goes to the parked-turn store under the run's admission (`checkpoint`, fenced like every
 * write of the turn; with grouped commits, in the transaction of that step's settlement and trail
 * records). A finish is not written (its ending is not in the record, nothing resumes from it),
 * nor a park (`park` stores it, with its asks). Each boundary stores only the messages the turn's
 * record does not hold yet (`held`: the digests stored by this run and, on a resume, the ones the
 * claim returned); the record refers to every message by digest. A process that dies mid-turn leaves its last
 * boundary: once the run's deadline passes, the maintenance tick claims it and goes on
 * (`resume.ts`). A write that fails ends the turn uncertain (cause `continuation`).
 */
export class Checkpoints implements ContinuationWriter {
  /** Whether a record was written (the run removes it when it ends). */
  wrote = false;
  /** The digests of the outputs the store holds for the turn. */
  readonly held: Set<string>;

  constructor(
    private readonly config: ResolvedConfig,
    private readonly parked: ParkedTurnStore,
    private readonly request: ParkedRequest,
    private readonly turn: TurnRef,
    held: Iterable<string> = [],
  ) {
    this.held = new Set(held);
  }

  async write(c: Continuation): Promise<void> {
    const { next } = c;
    if (next.kind === "finish") return;
    if (next.kind === "run_tools" && next.calls.some((call) => call.state === "asked")) return;
    const { continuation, outputs } = storedRecord(this.request, c, this.held);
    await this.parked.checkpoint({
      scope: this.turn.scope,
      sessionId: this.turn.sessionId,
      rootKey: this.turn.rootKey,
      admissionId: this.turn.admissionId,
      continuation,
      ...(outputs.length > 0 ? { outputs } : {}),
      now: this.config.clock.now(),
    });
    this.kept(outputs);
    this.wrote = true;
  }

  /** Outputs a write stored: the next boundary refers to them without storing them again. */
  kept(outputs: readonly TurnOutput[]): void {
    for (const o of outputs) this.held.add(o.digest);
  }
}
