import type { ToolDefinition } from "@alma-harness/core";
import { catalogOf, findTools, type ToolCatalog } from "../src/search/tool-search.js";
import { kindOf, type QueryCase, runSequence, type SequenceCase } from "./tool-search-score.js";

/**
 * What the tool-search benchmark prints beside its figures (issue 30): the four headline figures
 * per query kind, and every failure with what loaded, so a regression reads as queries, not as a
 * number. Shared by `bench/tool-search.bench.ts` and the baseline tests.
 */

export interface KindFigures {
  readonly n: number;
  /** Mean share of gold loaded at the default limit (5), over the kind's queries with gold; NaN when none. */
  readonly recall: number;
  /** Gold loads / all loads; NaN when nothing loaded. */
  readonly precision: number;
  /** Share of the kind's gold-empty queries that loaded nothing; NaN when none. */
  readonly noMatch: number;
}

const requestOf = (c: { readonly query?: string; readonly names?: readonly string[] }) => ({
  ...(c.query !== undefined ? { query: c.query } : {}),
  ...(c.names !== undefined ? { names: c.names } : {}),
});
const mean = (xs: readonly number[]) =>
  xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;

/** Figures per query kind (the `kind=` of each query's note), in first-seen order. */
export function byKind(
  tools: readonly ToolDefinition[],
  queries: readonly QueryCase[],
): Record<string, KindFigures> {
  const catalog = catalogOf(tools);
  const groups = new Map<string, QueryCase[]>();
  for (const q of queries) groups.set(kindOf(q), [...(groups.get(kindOf(q)) ?? []), q]);
  const out: Record<string, KindFigures> = {};
  for (const [kind, cases] of groups) {
    const recalls: number[] = [];
    const empty: number[] = [];
    let [found, loads] = [0, 0];
    for (const q of cases) {
      const { loaded } = findTools(catalog, () => false, requestOf(q));
      const hits = q.gold.filter((g) => loaded.includes(g)).length;
      if (q.gold.length > 0) recalls.push(hits / q.gold.length);
      else empty.push(loaded.length === 0 ? 1 : 0);
      found += hits;
      loads += loaded.length;
    }
    out[kind] = {
      n: cases.length,
      recall: mean(recalls),
      precision: loads === 0 ? Number.NaN : found / loads,
      noMatch: mean(empty),
    };
  }
  return out;
}

const said = (c: { readonly query?: string; readonly names?: readonly string[] }) =>
  c.query !== undefined ? `"${c.query}"` : `names ${JSON.stringify(c.names)}`;
const list = (xs: readonly string[]) => (xs.length === 0 ? "nothing" : xs.join(", "));

/** Every query whose loaded set is not its gold, and every sequence step that missed or over-loaded. */
export function failures(
  tools: readonly ToolDefinition[],
  queries: readonly QueryCase[],
  sequences: readonly SequenceCase[],
): string[] {
  const catalog: ToolCatalog = catalogOf(tools);
  const out: string[] = [];
  for (const q of queries) {
    const { loaded } = findTools(catalog, () => false, requestOf(q));
    const same = loaded.length === q.gold.length && q.gold.every((g) => loaded.includes(g));
    if (!same)
      out.push(`${q.id} [${kindOf(q)}] ${said(q)}: gold ${list(q.gold)}; loaded ${list(loaded)}`);
  }
  for (const seq of sequences) {
    const callable = new Set<string>();
    runSequence(catalog, seq).forEach((found, i) => {
      for (const n of found.loaded) callable.add(n);
      const step = seq.steps[i] as SequenceCase["steps"][number];
      const missed = step.gold.filter((g) => !callable.has(g));
      const extra = found.loaded.filter((n) => !step.gold.includes(n));
      if (missed.length > 0 || extra.length > 0)
        out.push(
          `${seq.id} step ${i + 1} ${said(step)}: gold ${list(step.gold)}; loaded ${list(found.loaded)}${missed.length > 0 ? " (MISSED)" : ""}`,
        );
    });
  }
  return out;
}

const cell = (x: number) => (Number.isNaN(x) ? "-" : x.toFixed(2));

/** The per-kind figures of several columns (catalog / set) as one text table, a row per kind. */
export function kindTable(columns: Readonly<Record<string, Record<string, KindFigures>>>): string {
  const names = Object.keys(columns);
  const kinds = [...new Set(names.flatMap((c) => Object.keys(columns[c] ?? {})))];
  const head = `| kind | ${names.join(" | ")} |`;
  const rule = `|---|${names.map(() => "---:").join("|")}|`;
  const rows = kinds.map((k) => {
    const cells = names.map((c) => {
      const f = columns[c]?.[k];
      if (!f) return "";
      return `${f.n}: r ${cell(f.recall)} p ${cell(f.precision)} nm ${cell(f.noMatch)}`;
    });
    return `| ${k} | ${cells.join(" | ")} |`;
  });
  return [head, rule, ...rows].join("\n");
}
