// What the durable benchmark's parent and its worker processes say to each other (node:child_process
// IPC). A worker warms up, says `ready`, waits for `go`, opens its store and runs its share of
// the turns, says `done`, waits for `close`, closes its store and exits.

export type StoreKind = "memory" | "sqlite" | "postgres";

export interface WorkerSpec {
  readonly store: StoreKind;
  /** `alma`: W2 turns through the runtime's composition; `floor`: plain INSERT transactions. */
  readonly kind: "alma" | "floor";
  readonly streams: number;
  /** Measured turns of this worker (a floor worker runs `commitsPerTurn` transactions per turn). */
  readonly turns: number;
  /** Warm-up turns before `ready`, on a store of their own that is closed before the measure. */
  readonly warmup: number;
  /** Unique per phase: session ids and idempotency keys start with it. */
  readonly tag: string;
  /** SQLite: the database file (alma) or the floor file (floor). */
  readonly path?: string;
  /** PostgreSQL: the bench database. */
  readonly url?: string;
  /** PostgreSQL: the store's schema (alma; its root results in `${schema}_root`) or the floor table's. */
  readonly schema?: string;
  /** Floor: transactions per turn (the store's measured commits per turn, fractional). */
  readonly commitsPerTurn?: number;
}

export interface WorkerResult {
  readonly turns: number;
  /** The measured window, wall clock in ms since the epoch (one machine, one clock). */
  readonly startMs: number;
  readonly endMs: number;
  /** `process.cpuUsage()` user + system over the window, µs. */
  readonly cpuUs: number;
  /** Per turn (alma) or per transaction (floor), ms. */
  readonly latenciesMs: readonly number[];
  /** SQLite: prepared-statement executions over the window (kit/sqlite-counts.ts). */
  readonly sqliteStatements?: {
    readonly all: number;
    readonly writes: number;
    readonly control: number;
  };
  /** PostgreSQL alma: the store set's own `roundTripCount()` over the window (client side). */
  readonly roundTrips?: number;
}

export type ToWorker = { readonly type: "go" } | { readonly type: "close" };

export type FromWorker =
  | { readonly type: "ready" }
  | { readonly type: "done"; readonly result: WorkerResult }
  | { readonly type: "error"; readonly message: string };
