// The durable benchmark's figures from its workers' results and counts, and its tables.
import type { StoreKind, WorkerResult } from "./protocol.js";

/** What the store's meter counted over a phase (totals, the open's own share already taken out). */
export interface Counted {
  /** SQLite: prepared-statement executions; PostgreSQL: pg_stat_statements calls. */
  readonly statements?: number;
  /** PostgreSQL: committed transactions, counted by the server. */
  readonly commits?: number;
  /** SQLite: commit frames in the WAL files. */
  readonly flushes?: number;
  /** PostgreSQL: statements by first keyword. */
  readonly byKind?: Readonly<Record<string, number>>;
  /** PostgreSQL alma: the store set's own round-trip count (client side). */
  readonly roundTrips?: number;
  /** SQLite: statement executions that write. */
  readonly writes?: number;
  /** Of `statements`, those that only open, close or mark a transaction. */
  readonly control?: number;
  /** PostgreSQL: transactions rolled back (pg_stat_database `xact_rollback`). */
  readonly rollbacks?: number;
  /** PostgreSQL: pg_stat_statements entries evicted meanwhile (its statement counts are then short). */
  readonly evicted?: number;
}

export interface Phase {
  readonly store: StoreKind;
  readonly kind: "alma" | "floor";
  readonly processes: number;
  readonly streams: number;
  readonly results: readonly WorkerResult[];
  readonly counted: Counted;
  /** Alma phases: the floor phase at the same shape, once run. */
  floor?: Phase;
}

/** Nearest-rank percentile of ascending `sorted`. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export function summarize(phase: Phase) {
  const { results } = phase;
  const turns = results.reduce((n, r) => n + r.turns, 0);
  const start = Math.min(...results.map((r) => r.startMs));
  const end = Math.max(...results.map((r) => r.endMs));
  const perProcess =
    results.reduce((sum, r) => sum + r.turns / ((r.endMs - r.startMs) / 1000), 0) / results.length;
  const latencies = results.flatMap((r) => r.latenciesMs).sort((a, b) => a - b);
  return {
    turns,
    turnsPerS: turns / ((end - start) / 1000),
    perProcess,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    cpuMs: results.reduce((sum, r) => sum + r.cpuUs, 0) / 1000 / turns,
  };
}

const fixed = (n: number | undefined, digits: number) =>
  n === undefined || Number.isNaN(n)
    ? "-"
    : n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => "-".repeat(i === 0 ? w + 2 : w + 1) + (i === 0 ? "" : ":")).join("|")}|`;
  return [line(header), rule, ...rows.map(line)].join("\n");
}

export const MAIN_HEADER = [
  "store",
  "processes × streams",
  "turns",
  "turns/s",
  "turns/s per process",
  "p50 ms",
  "p99 ms",
  "CPU ms/turn",
  "statements/turn",
  "commits/turn",
  "flushes/turn",
  "floor turns/s",
  "Alma ÷ floor",
];

/** One row of the main table: an Alma phase (with its floor's turns/s and the ratio) or a floor. */
export function mainRow(phase: Phase): string[] {
  const s = summarize(phase);
  const per = (n: number | undefined) => (n === undefined ? undefined : n / s.turns);
  const floor = phase.floor ? summarize(phase.floor).turnsPerS : undefined;
  const alma = phase.kind === "alma";
  return [
    alma ? phase.store : `${phase.store} floor`,
    `${phase.processes} × ${phase.streams}`,
    String(s.turns),
    fixed(s.turnsPerS, 0),
    fixed(s.perProcess, 0),
    alma ? fixed(s.p50, 2) : "-",
    alma ? fixed(s.p99, 2) : "-",
    fixed(s.cpuMs, 2),
    fixed(per(phase.counted.statements), 1),
    fixed(per(phase.counted.commits), 2),
    fixed(per(phase.counted.flushes), 2),
    alma ? fixed(floor, 0) : "-",
    alma && floor ? `${fixed(s.turnsPerS / floor, 3)}×` : "-",
  ];
}

/** Statements per turn: PostgreSQL's by kind (server) and the client's round trips; SQLite's writes. */
export function statementTable(phases: readonly Phase[]): string {
  const perTurn = (p: Phase, n: number | undefined) => fixed((n ?? 0) / summarize(p).turns, 1);
  const name = (p: Phase) =>
    `${p.store}${p.kind === "floor" ? " floor" : ""} ${p.processes} × ${p.streams}`;
  const counts = (p: Phase) => [
    name(p),
    perTurn(p, p.counted.statements),
    perTurn(p, p.counted.control),
    perTurn(p, (p.counted.statements ?? 0) - (p.counted.control ?? 0)),
  ];
  const pg = phases.filter((p) => p.store === "postgres" && p.counted.byKind);
  const kinds = [...new Set(pg.flatMap((p) => Object.keys(p.counted.byKind!)))].sort(
    (a, b) => (pg[0]?.counted.byKind?.[b] ?? 0) - (pg[0]?.counted.byKind?.[a] ?? 0),
  );
  const common = ["phase", "statements", "transaction control", "the rest"];
  const sqlite = phases.filter((p) => p.store === "sqlite" && p.counted.writes !== undefined);
  const parts: string[] = [];
  if (pg.length > 0)
    parts.push(
      markdownTable(
        [...common, ...kinds, "client round trips"],
        pg.map((p) => [
          ...counts(p),
          ...kinds.map((k) => perTurn(p, p.counted.byKind![k])),
          p.counted.roundTrips === undefined ? "-" : perTurn(p, p.counted.roundTrips),
        ]),
      ),
    );
  if (sqlite.length > 0)
    parts.push(
      markdownTable(
        [...common, "writes"],
        sqlite.map((p) => [...counts(p), perTurn(p, p.counted.writes)]),
      ),
    );
  return parts.join("\n\n");
}

/** What a reader must know about a phase's counts: rollbacks, and statement counts cut short. */
export function countNotes(phases: readonly Phase[]): string[] {
  const notes: string[] = [];
  for (const p of phases) {
    const name = `${p.store}${p.kind === "floor" ? " floor" : ""} ${p.processes} × ${p.streams}`;
    if (p.counted.rollbacks) notes.push(`${name}: ${p.counted.rollbacks} transactions rolled back`);
    if (p.counted.evicted)
      notes.push(
        `${name}: ${p.counted.evicted} pg_stat_statements entries evicted: statements undercounted`,
      );
  }
  return notes;
}
