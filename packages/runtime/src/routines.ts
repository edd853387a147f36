import type { ConversationStores } from "@alma-harness/conversation";
import type { Clock, OutputSink, RoutineRunStore, RoutineStore } from "@alma-harness/core";
import {
  cachedTurns,
  createRoutineScheduler,
  type RoutineJobs,
  type RoutineScheduler,
} from "@alma-harness/schedule";
import type { Runtime } from "./compose.js";

/** A store set that keeps routines and their runs (every composition's: memory, SQLite, PostgreSQL). */
export interface RoutineStores {
  readonly routines: RoutineStore;
  readonly routineRuns: RoutineRunStore;
}

export function hasRoutineStores(
  stores: ConversationStores,
): stores is ConversationStores & RoutineStores {
  const s = stores as Partial<RoutineStores>;
  return typeof s.routines?.scan === "function" && typeof s.routineRuns?.claim === "function";
}

export interface RoutineOptions {
  readonly sink: OutputSink;
  /** This process's claimer id: unique per host process (a hostname and pid). */
  readonly owner: string;
  readonly jobs?: RoutineJobs;
  readonly profiles?: readonly string[];
  readonly clock?: Pick<Clock, "now">;
  readonly graceMs?: number;
  readonly interruptedAfterMs?: number;
}

/**
 * The runtime's routine scheduler: the composition's routine stores, and each routine's turn run
 * by `runtime.runnerFor({ perTurnUsd: cap })` — the same stores, configuration and trail key as
 * the runtime's own runner, with the routine's cap as the turn's.
 */
export function routineScheduler(
  runtime: Runtime,
  opts: RoutineOptions,
): RoutineScheduler & { readonly stores: RoutineStores } {
  const stores = runtime.stores;
  if (!hasRoutineStores(stores))
    throw new TypeError(
      "the runtime's stores keep no routines (compose them with routines and routineRuns)",
    );
  const scheduler = createRoutineScheduler({
    routines: stores.routines,
    runs: stores.routineRuns,
    turns: cachedTurns((caps) => runtime.runnerFor(caps)),
    ...opts,
  });
  return Object.freeze({
    ...scheduler,
    stores: { routines: stores.routines, routineRuns: stores.routineRuns },
  });
}
