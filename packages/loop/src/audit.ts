import type { AuditEvent, AuditLog, DurabilityBarrier } from "@alma-harness/core";
import { UncertainTurnError } from "./errors.js";

/** Every trail event is awaited; a failing audit log makes the turn uncertain and stops further effects. */
export async function durable(audit: AuditLog, event: AuditEvent): Promise<void> {
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
export async function commitBefore(engine: {
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
