import type { AuditEvent, AuditLog, Clock, DurabilityBarrier, Trail } from "@alma-harness/core";
import { UncertainTurnError } from "./errors.js";
import { emitTo, type LoopEvent, type LoopEventSink } from "./events.js";
import { type TurnTrail, trailBase } from "./trail.js";

type Base = "trail" | "scope" | "sessionId" | "turnId" | "callId" | "at";
/** What a record on `trail` adds to the turn's base (scope, session pseudonym, turn, call, time). */
export type RecordFields<T extends Trail> = Omit<Extract<AuditEvent, { trail: T }>, Base>;

/**
 * One turn's writer of what it did: trail records (awaited, in order; a failing audit log makes
 * the turn uncertain and stops further effects), events to the host (never awaited, never able
 * to throw into the turn), and the durability point before host code runs. Built once per turn
 * with the trail values, so no stage builds a record head or an event sink of its own.
 */
export interface Recorder {
  readonly turnId: string;
  readonly trail: TurnTrail;
  now(): number;
  record<T extends Trail>(trail: T, fields: RecordFields<T>, callId?: string): Promise<void>;
  emit(event: LoopEvent): void;
  /** Commits what a grouping store holds pending before host code or an effect (no barrier: free). */
  commit(): Promise<void>;
}

export interface RecorderParts {
  readonly turnId: string;
  readonly trail: TurnTrail;
  readonly audit: AuditLog;
  readonly clock: Clock;
  readonly barrier: DurabilityBarrier | undefined;
  /** The engine's sink, then the turn's; absent ones cost nothing. */
  readonly sinks: readonly (LoopEventSink | undefined)[];
}

export function turnRecorder(parts: RecorderParts): Recorder {
  const { audit, clock, trail } = parts;
  const sinks = parts.sinks.filter((s): s is LoopEventSink => s !== undefined);
  const engine = { barrier: parts.barrier };
  return Object.freeze({
    turnId: parts.turnId,
    trail,
    now: () => clock.now(),
    record: <T extends Trail>(name: T, fields: RecordFields<T>, callId?: string) =>
      durable(audit, {
        trail: name,
        ...trailBase(trail, clock.now(), callId),
        ...fields,
      } as unknown as AuditEvent),
    emit:
      sinks.length === 0
        ? () => undefined
        : (event: LoopEvent) => {
            for (const sink of sinks) emitTo(sink, event);
          },
    commit: () => commitBefore(engine),
  });
}

/** Every trail event is awaited; a failing audit log makes the turn uncertain and stops further effects. */
async function durable(audit: AuditLog, event: AuditEvent): Promise<void> {
  try {
    await audit.append(event);
  } catch (error) {
    throw new UncertainTurnError("audit", `the ${event.trail} trail could not be written`, error);
  }
}

/**
 * The durability point before host code runs or an effect follows (spec: a durable turn in five
 * commits): a store set that groups its writes commits what is pending. No barrier, no cost.
 */
async function commitBefore(engine: {
  readonly barrier: DurabilityBarrier | undefined;
}): Promise<void> {
  const barrier = engine.barrier;
  if (!barrier) return;
  try {
    await barrier.commit();
  } catch (error) {
    throw new UncertainTurnError(
      "commit",
      "the store could not make the turn's writes durable",
      error,
    );
  }
}
