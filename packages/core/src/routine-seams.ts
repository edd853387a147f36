import type { BudgetCapName } from "./caps.js";
import type { Scope } from "./scope.js";

/**
 * Where a routine's schedule fires from (seed 001, "TriggerSource"). The host's clock is the
 * default (`@alma-harness/schedule`'s interval tick); a queue, a platform scheduler or a test's
 * manual clock are others. Contract: `start` calls `fire(now)` whenever the source decides the
 * runner should look for due slots, never twice at once (the next fire waits for the last to
 * settle); `fire` never throws (its failures are the runner's to record); `stop` resolves once no
 * fire is running and none will start. A fire is only a prompt: which slots are due is computed
 * from the routines' schedules and the recorded runs, so a late, doubled or skipped fire can
 * neither run a slot twice nor lose one (a slot it skips is found `missed` or run late by the next).
 */
export interface TriggerSource {
  start(fire: (now: number) => Promise<void>): void;
  stop(): Promise<void>;
}

/** What a routine's run hands its destination: the result text and the metadata that goes with it. Content: the sink's to keep safe. */
export interface RoutineOutput {
  readonly scope: Scope;
  readonly routineId: string;
  /** The slot's time, epoch ms. */
  readonly slot: number;
  /** A stable id for this slot's delivery (`<routineId>@<slot ISO>#<attempt>`): a sink dedupes on it. */
  readonly deliveryId: string;
  readonly destination: string;
  readonly text: string;
  readonly turnId?: string;
  readonly costMicros: number;
  /** The caps the run crossed (a warn cap lets the run finish and says so); absent when none. */
  readonly capsCrossed?: readonly BudgetCapName[];
  /** Run after its slot, because the routine says `catchUp`. */
  readonly late?: true;
}

/**
 * Where a result goes (seed 001, "OutputSink"): a named destination (an inbox, a webhook, a
 * clinic's staff channel). Contract: `deliver` resolves once the destination has the output. A
 * throw cannot say whether the destination has it, so the runner records the run
 * `reconciliation_required` (`delivery_failed`) and never delivers again by itself (see the
 * schedule README). A sink must accept the same `deliveryId` twice without delivering twice.
 * `destinations` names what it serves: a routine naming another is refused before it runs.
 */
export interface OutputSink {
  readonly destinations: readonly string[];
  deliver(output: RoutineOutput): Promise<void>;
}
