import { readFileSync } from "node:fs";
import { defineTool, type JsonObject, type ToolDefinition } from "@alma-harness/core";
import {
  catalogOf,
  findTools,
  RANKING,
  type Ranking,
  type SearchFindings,
  type SearchRequest,
  type ToolCatalog,
} from "../src/search/tool-search.js";

/**
 * Scores `search_tools` on the committed catalogs (test/toolsearch, see SOURCES.md). Every catalog
 * tool is registered deferred, as a host with that many tools would. Every metric is a share in
 * 0..1 where higher is better, so the baseline check is one comparison.
 *
 * Queries (each a fresh search, nothing loaded before, default limit unless `@k`):
 * - `recall@1`, `recall@3`, `recall@5`: mean over queries with gold tools of the share of gold
 *   tools loaded, with `limit` k (5 is the default limit);
 * - `precision`: gold tools loaded / all tools loaded, over every query (a load on a query whose
 *   gold is empty counts against it); "acceptable extras" named in the notes count against it too;
 * - `abstention`: share of the queries whose gold is empty (no such tool, an ambiguous or unknown
 *   name) that loaded nothing;
 * - `exact`: share of queries whose loaded set is exactly the gold set.
 * Sequences (the steps of one task in order; loads persist, as in a conversation):
 * - `stepRecall`: share of steps after which every gold tool of the step is callable;
 * - `sequenceSuccess`: share of sequences where every step succeeded;
 * - `loadPrecision`: gold tools / tools loaded, over every step;
 * - `contextSaved`: 1 - (size of the definitions advertised at the end of a sequence: search_tools
 *   and the loaded tools) / (size of all the catalog's definitions), averaged over sequences.
 */

const DIR = new URL("./toolsearch/", import.meta.url);
/** The MCP servers' catalogs' queries (`toolsearch/mcp/README.md`); their tools are listed live. */
export const MCP_QUERY_DIR = new URL("./toolsearch/mcp/", import.meta.url);
export const CATALOGS = ["devtools", "workspace", "commerce"] as const;
export type CatalogName = (typeof CATALOGS)[number];

interface CatalogEntry {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonObject;
}
export interface QueryCase {
  readonly id: string;
  readonly note?: string;
  readonly query?: string;
  readonly names?: readonly string[];
  readonly gold: readonly string[];
}
export interface SequenceCase {
  readonly id: string;
  readonly steps: readonly {
    readonly query?: string;
    readonly names?: readonly string[];
    readonly gold: readonly string[];
  }[];
}

export type Scores = Record<string, number>;

function read<T>(file: string): T {
  return JSON.parse(readFileSync(new URL(file, DIR), "utf8")) as T;
}

/** An MCP catalog's queries and sequences (its tools come from the servers, listed live). */
export function mcpCasesOf(name: string): {
  readonly queries: QueryCase[];
  readonly sequences: SequenceCase[];
} {
  const at = (file: string) => JSON.parse(readFileSync(new URL(file, MCP_QUERY_DIR), "utf8"));
  return { queries: at(`queries-${name}.json`), sequences: at(`sequences-${name}.json`) };
}

const defined = new Map<CatalogName, readonly ToolDefinition[]>();

/** A catalog's tools registered as a host would: `defineTool`, every one deferred (defined once per file run). */
export function catalogTools(name: CatalogName): readonly ToolDefinition[] {
  let tools = defined.get(name);
  if (!tools) {
    tools = read<CatalogEntry[]>(`catalog-${name}.json`).map((t) =>
      defineTool({
        name: t.name,
        description: t.description,
        input: t.inputSchema,
        deferred: true,
        handler: () => ({ ok: true }),
      }),
    );
    defined.set(name, tools);
  }
  return tools;
}

/**
 * Which queries: `public` is the committed benchmark set (test/toolsearch, SOURCES.md); `project`
 * is the set the project wrote itself and never tunes on (test/toolsearch/project/README.md);
 * `tune` and `check` are the two halves of the public set (every other query of each kind, every
 * other sequence), so a rule tuned on one half shows what it does on the other; `fresh` was written
 * after the ranking was tuned, from the catalogs alone, by someone who never saw the ranking or its
 * results (test/toolsearch/fresh/README.md), and is never tuned on either.
 */
export const QUERY_SETS = ["public", "tune", "check", "project", "fresh"] as const;
export type QuerySet = (typeof QUERY_SETS)[number];

export const kindOf = (c: QueryCase) => /kind=([a-z_]+)/.exec(c.note ?? "")?.[1] ?? "";

/** Every other case of each kind: the first, third, ... are `tune`; the second, fourth, ... are `check`. */
function halfOf<T>(cases: readonly T[], kind: (c: T) => string, half: "tune" | "check"): T[] {
  const seen = new Map<string, number>();
  return cases.filter((c) => {
    const k = kind(c);
    const n = seen.get(k) ?? 0;
    seen.set(k, n + 1);
    return (n % 2 === 0) === (half === "tune");
  });
}

export function queriesOf(name: CatalogName, set: QuerySet = "public"): QueryCase[] {
  if (set === "project" || set === "fresh") return read<QueryCase[]>(`${set}/queries-${name}.json`);
  const all = read<QueryCase[]>(`queries-${name}.json`);
  return set === "public" ? all : halfOf(all, kindOf, set);
}

export function sequencesOf(name: CatalogName, set: QuerySet = "public"): SequenceCase[] {
  if (set === "project" || set === "fresh")
    return read<SequenceCase[]>(`${set}/sequences-${name}.json`);
  const all = read<SequenceCase[]>(`sequences-${name}.json`);
  return set === "public" ? all : halfOf(all, () => "", set);
}

function requestOf(
  c: { readonly query?: string; readonly names?: readonly string[] },
  limit?: number,
): SearchRequest {
  return {
    ...(c.query !== undefined ? { query: c.query } : {}),
    ...(c.names !== undefined ? { names: c.names } : {}),
    ...(limit !== undefined ? { limit } : {}),
  };
}

const hits = (loaded: readonly string[], gold: readonly string[]) =>
  gold.filter((g) => loaded.includes(g)).length;
const mean = (xs: readonly number[]) =>
  xs.length === 0 ? 1 : xs.reduce((a, b) => a + b, 0) / xs.length;
const round = (x: number) => Math.round(x * 10_000) / 10_000;

/** Runs a sequence's steps in order; loads persist. Returns each step's findings. */
export function runSequence(catalog: ToolCatalog, seq: SequenceCase): SearchFindings[] {
  const loaded = new Set<string>();
  return seq.steps.map((step) => {
    const found = findTools(catalog, (n) => loaded.has(n), requestOf(step));
    for (const n of found.loaded) loaded.add(n);
    return found;
  });
}

function queryScores(catalog: ToolCatalog, queries: readonly QueryCase[]): Scores {
  const out: Scores = {};
  for (const k of [1, 3, 5]) {
    const recalls = queries
      .filter((q) => q.gold.length > 0)
      .map(
        (q) =>
          hits(findTools(catalog, () => false, requestOf(q, k)).loaded, q.gold) / q.gold.length,
      );
    out[`recall@${k}`] = mean(recalls);
  }
  let found = 0;
  let loadedTotal = 0;
  const abstained: number[] = [];
  const exact: number[] = [];
  for (const q of queries) {
    const { loaded } = findTools(catalog, () => false, requestOf(q));
    found += hits(loaded, q.gold);
    loadedTotal += loaded.length;
    if (q.gold.length === 0) abstained.push(loaded.length === 0 ? 1 : 0);
    exact.push(loaded.length === q.gold.length && hits(loaded, q.gold) === q.gold.length ? 1 : 0);
  }
  out.precision = loadedTotal === 0 ? 1 : found / loadedTotal;
  out.abstention = mean(abstained);
  out.exact = mean(exact);
  return out;
}

function sequenceScores(
  catalog: ToolCatalog,
  tools: readonly ToolDefinition[],
  sequences: readonly SequenceCase[],
  searchSize: number,
): Scores {
  const size = new Map(
    tools.map((t) => [
      t.name,
      JSON.stringify({ name: t.name, description: t.description, inputSchema: t.inputSchema })
        .length,
    ]),
  );
  const all = [...size.values()].reduce((a, b) => a + b, 0);
  const steps: number[] = [];
  const whole: number[] = [];
  const saved: number[] = [];
  let gold = 0;
  let loads = 0;
  for (const seq of sequences) {
    const callable = new Set<string>();
    let ok = true;
    runSequence(catalog, seq).forEach((found, i) => {
      for (const n of found.loaded) callable.add(n);
      const step = seq.steps[i] as SequenceCase["steps"][number];
      const done = step.gold.every((g) => callable.has(g));
      steps.push(done ? 1 : 0);
      ok &&= done;
      gold += step.gold.length;
      loads += found.loaded.length;
    });
    whole.push(ok ? 1 : 0);
    const advertised = searchSize + [...callable].reduce((a, n) => a + (size.get(n) ?? 0), 0);
    saved.push(1 - advertised / all);
  }
  return {
    stepRecall: mean(steps),
    sequenceSuccess: mean(whole),
    loadPrecision: loads === 0 ? 1 : gold / loads,
    contextSaved: mean(saved),
  };
}

/** Every metric for one catalog's tools and cases, rounded to four places. */
export function scoreTools(
  tools: readonly ToolDefinition[],
  queries: readonly QueryCase[],
  sequences: readonly SequenceCase[],
  searchSize: (tools: readonly ToolDefinition[]) => number,
  ranking: Ranking = RANKING,
): Scores {
  const catalog = catalogOf(tools, ranking);
  const scores = {
    ...queryScores(catalog, queries),
    ...sequenceScores(catalog, tools, sequences, searchSize(tools)),
  };
  return Object.fromEntries(Object.entries(scores).map(([k, v]) => [k, round(v)]));
}

/** Every metric for one committed catalog and query set, rounded to four places. */
export function scoreCatalog(
  name: CatalogName,
  searchSize: (tools: readonly ToolDefinition[]) => number,
  set: QuerySet = "public",
  ranking: Ranking = RANKING,
): Scores {
  return scoreTools(
    catalogTools(name),
    queriesOf(name, set),
    sequencesOf(name, set),
    searchSize,
    ranking,
  );
}

/** The mean of the catalogs' scores, metric by metric. */
export function overall(per: Readonly<Record<string, Scores>>): Scores {
  const names = Object.keys(per);
  const metrics = Object.keys(per[names[0] as string] ?? {});
  return Object.fromEntries(
    metrics.map((m) => [m, round(mean(names.map((n) => (per[n] as Scores)[m] as number)))]),
  );
}

/** The rows of the table: the metric and how the table names it. */
export const TABLE_ROWS: readonly (readonly [string, string])[] = [
  ["recall@5", "recall@5"],
  ["precision", "precision of what loads"],
  ["abstention", "no-match queries that load nothing"],
  ["exact", "loaded set exactly right"],
  ["sequenceSuccess", "sequences that reach every tool they need"],
];

/** The overall figures of each query set as a text table (one column per set). */
export function table(figures: Readonly<Record<string, Scores>>): string {
  const sets = Object.keys(figures);
  const width = Math.max(...TABLE_ROWS.map(([, label]) => label.length));
  const head = `| ${"".padEnd(width)} | ${sets.map((s) => s.padStart(7)).join(" | ")} |`;
  const rule = `|${"-".repeat(width + 2)}|${sets.map(() => "--------:").join("|")}|`;
  const rows = TABLE_ROWS.map(
    ([metric, label]) =>
      `| ${label.padEnd(width)} | ${sets.map((s) => ((figures[s] as Scores)[metric] ?? 0).toFixed(2).padStart(7)).join(" | ")} |`,
  );
  return [head, rule, ...rows].join("\n");
}
