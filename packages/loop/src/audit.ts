import type { AuditEvent, AuditLog } from "@alma-harness/core";
import { UncertainTurnError } from "./errors.js";

/** Every trail event is awaited; a failing audit log makes the turn uncertain and stops further effects. */
export async function durable(audit: AuditLog, event: AuditEvent): Promise<void> {
  try {
    await audit.append(event);
  } catch (error) {
    throw new UncertainTurnError("audit", `the ${event.trail} trail could not be written`, error);
  }
}
