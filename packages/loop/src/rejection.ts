import { failureOf } from "@alma-harness/core";
import type { Ending } from "./limits.js";
import { callsLeft, type RotationTurn, rotate } from "./rotation.js";
import { type Rejection, rejectionError } from "./step-results.js";
import type { TurnState } from "./state.js";

/** An attested context refusal with no rotation left: completed, empty, `context_window_exceeded`. */
const CONTEXT_EXCEEDED: Ending = Object.freeze({
  reply: Object.freeze([]),
  stopReason: "context_window_exceeded",
  terminalReason: "completed",
});

/**
 * Whether a refused main call may release the turn (spec: pre-stream-rejections): the flag is set,
 * the call was the turn's first and only one, it carried no final-answer notice, and the turn has
 * recorded nothing but its input (no rotation).
 */
export function releasable(
  release: boolean,
  state: TurnState,
  notice: string | undefined,
): boolean {
  return (
    release &&
    notice === undefined &&
    state.steps === 1 &&
    state.callsUsed === 1 &&
    !state.log.rotated &&
    state.log.added.length === 1
  );
}

/**
 * How the main loop reacts to the trusted settled rejection marker of its own call, before
 * anything of that call is recorded or observed:
 * - a context refusal permits one rotation and a replacement call (`"retry"`) when the policy can
 *   rotate and two calls are left; otherwise the turn completes with `context_window_exceeded`;
 * - a pre-stream rate limit or overload on a releasable turn ends it completed with
 *   `terminalReason: "error"`, its failure, and nothing recorded, the input included;
 * - anything else is thrown on, uncertain as any failure (cause `call:main:rejected:<proof>`).
 */
export async function afterRejection(
  turn: RotationTurn & { readonly releasePreStreamRejections: boolean },
  state: TurnState,
  error: Rejection,
  notice: string | undefined,
): Promise<Ending | "retry"> {
  if (error.callKind !== "main") throw rejectionError(error);
  if (error.proof === "context_window") {
    if (callsLeft(turn.calls.limits, state) < 2) return CONTEXT_EXCEEDED;
    const rotation = await rotate(turn, state, error.operationId);
    if (rotation.status === "rotated") return "retry";
    return rotation.status === "refused" ? rotation.ending : CONTEXT_EXCEEDED;
  }
  if (!releasable(turn.releasePreStreamRejections, state, notice)) throw rejectionError(error);
  state.log.discard();
  // The stored failure names the proof, never the provider's own text.
  const failure = {
    ...failureOf(error.providerError),
    message: `the provider refused the call before any stream (${error.proof})`,
  };
  return { reply: [], stopReason: null, terminalReason: "error", failure };
}
