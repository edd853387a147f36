import type { ConversationRunner } from "@alma-harness/conversation";
import type { CapInput, Routine } from "@alma-harness/core";
import type { RoutineTurns } from "./run.js";

/**
 * `RoutineTurns` from a factory of conversation runners: one runner per distinct cap (its
 * `perTurnUsd`), made on first use and kept, all over the same stores. A routine's per-run cap is
 * its one turn's per-turn cap, so it is enforced by the runner's own fail-closed pricing and block
 * reservation, never re-implemented here.
 */
export function cachedTurns(
  make: (caps: { readonly perTurnUsd: CapInput }) => Pick<ConversationRunner, "runTurn">,
): RoutineTurns {
  const runners = new Map<string, Pick<ConversationRunner, "runTurn">>();
  return (cap: Routine["cap"]) => {
    const key = `${cap.usd}:${cap.onExceeded}`;
    let runner = runners.get(key);
    if (!runner) {
      runner = make({ perTurnUsd: { usd: cap.usd, onExceeded: cap.onExceeded } });
      runners.set(key, runner);
    }
    return runner;
  };
}
