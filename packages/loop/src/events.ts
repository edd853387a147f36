import type { CostReceipt, StopReason, Usage } from "@alma-harness/core";
import type { TurnOutcome } from "./result.js";
import type { CacheHygieneCause } from "./cache-hygiene.js";

/**
 * What the engine tells an optional sink, in the order things happen. A sink is called
 * synchronously and never awaited; a throw or a rejected promise from it is swallowed, so a slow or
 * broken sink can neither block nor break a turn.
 */
export type LoopEvent =
  /**
   * One run of the engine begins (seed 004): first of its events, before `turn.started` (or
   * `turn.resumed` for a parked turn that goes on).
   */
  | { readonly type: "agent.started"; readonly turnId: string; readonly sessionId: string }
  | { readonly type: "turn.started"; readonly turnId: string; readonly sessionId: string }
  | {
      readonly type: "message.completed";
      readonly turnId: string;
      readonly role: "user" | "assistant";
      readonly revision: number;
    }
  | {
      readonly type: "model.request";
      readonly turnId: string;
      readonly step: number;
      readonly contextVersion: number;
      readonly messageRevision: number;
      readonly model: string;
    }
  | {
      readonly type: "model.response";
      readonly turnId: string;
      readonly step: number;
      readonly stopReason: StopReason;
      readonly usage?: Usage;
    }
  | {
      readonly type: "step.text";
      readonly turnId: string;
      readonly step: number;
      readonly text: string;
    }
  | {
      readonly type: "tool.call";
      readonly turnId: string;
      readonly callId: string;
      readonly name: string;
    }
  | {
      readonly type: "policy.decision";
      readonly turnId: string;
      readonly callId: string;
      readonly decision: "allow" | "ask" | "deny";
      readonly by: "operator" | "kernel";
    }
  | {
      readonly type: "permission.requested";
      readonly turnId: string;
      readonly callId: string;
      readonly action: string;
      readonly subject: string;
    }
  | {
      readonly type: "permission.resolved";
      readonly turnId: string;
      readonly callId: string;
      readonly allowed: boolean;
      readonly by: "operator" | "kernel";
    }
  | {
      readonly type: "tool.result";
      readonly turnId: string;
      readonly callId: string;
      readonly name: string;
      readonly isError: boolean;
      readonly code?: string;
    }
  | { readonly type: "cost.receipt"; readonly turnId: string; readonly receipt: CostReceipt }
  | {
      readonly type: "cache.hygiene";
      readonly turnId: string;
      readonly step: number;
      readonly cause: CacheHygieneCause;
      readonly streak: number;
    }
  | {
      readonly type: "budget.warning";
      readonly turnId: string;
      readonly metric: string;
      readonly used: number;
      readonly limit: number;
    }
  | {
      readonly type: "turn.completed";
      readonly turnId: string;
      readonly outcome: "completed" | "reconciliation_required";
      readonly terminalReason?: string;
      readonly cause?: string;
    }
  | {
      /**
       * The run ended (seed 004): last of its events, after its one `turn.completed` (or
       * `turn.parked`); `status` is the run's outcome.
       */
      readonly type: "agent.stopped";
      readonly turnId: string;
      readonly status: TurnOutcome["status"];
    }
  | {
      /** A parked turn goes on in this run, with the decisions it was given. */
      readonly type: "turn.resumed";
      readonly turnId: string;
      readonly sessionId: string;
    }
  | {
      /** The run stopped at permission asks; the turn resumes when they are decided. */
      readonly type: "turn.parked";
      readonly turnId: string;
      readonly asks: readonly {
        readonly askId: string;
        readonly callId: string;
        readonly name: string;
      }[];
    };

export type LoopEventSink = (event: LoopEvent) => void | Promise<void>;

export function emitTo(sink: LoopEventSink | undefined, event: LoopEvent): void {
  if (!sink) return;
  try {
    const out = sink(event);
    if (out && typeof (out as Promise<void>).then === "function")
      (out as Promise<void>).then(undefined, () => undefined);
  } catch {
    // a sink failure never reaches the turn
  }
}
