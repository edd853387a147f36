import { type ModelRequest, trailKind, type Usage } from "@alma-harness/core";
import {
  CACHE_HYGIENE_CAUSES,
  type CacheHygieneGuard,
  type CacheHygieneWarning,
} from "./cache-hygiene.js";
import type { Recorder } from "./recorder.js";

/**
 * The engine's side: a main step's pinned request and usage go to the registered guard; a warning
 * lands on the context trail (`cache_hygiene:<cause>`, decision `warned`) and reaches the host's
 * sink as `cache.hygiene`. No guard, no work.
 */
export async function observeCache(
  guard: CacheHygieneGuard | undefined,
  rec: Recorder,
  step: number,
  request: ModelRequest,
  usage: Usage,
): Promise<void> {
  if (!guard) return;
  const at = rec.now();
  let warning: CacheHygieneWarning | undefined;
  try {
    warning = guard.observe({ session: rec.trail.session, at, request, usage });
  } catch {
    // An observer failure never reaches the turn.
    return;
  }
  if (!warning || !CACHE_HYGIENE_CAUSES.includes(warning.cause)) return;
  await rec.record("context", {
    step,
    field: trailKind(`cache_hygiene:${warning.cause}`),
    decision: "warned",
  });
  rec.emit({
    type: "cache.hygiene",
    turnId: rec.turnId,
    step,
    cause: warning.cause,
    streak: warning.streak,
  });
}
