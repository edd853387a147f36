// The tool-search quality report (issue 30), printed by tool-search.bench.ts: recall@5, precision,
// no-match and sequences per catalog and query set (the committed catalogs' public, project and
// fresh sets; the MCP servers' catalogs, listed live through @alma-harness/mcp's loader), then the
// same per query kind, then every failure with what loaded.
import type { ToolDefinition } from "../packages/core/src/index.js";
import { searchSpecOf } from "../packages/loop/src/search/loads.js";
import {
  byKind,
  failures,
  type KindFigures,
  kindTable,
} from "../packages/loop/test/tool-search-report.js";
import {
  CATALOGS,
  catalogTools,
  mcpCasesOf,
  type QueryCase,
  queriesOf,
  type Scores,
  type SequenceCase,
  scoreTools,
  sequencesOf,
} from "../packages/loop/test/tool-search-score.js";
import { MCP_CATALOG_NAMES, mcpCatalogTools } from "../packages/mcp/test/tool-search-catalogs.js";

/** The issue's targets, on every catalog and set. */
export const TARGETS = { "recall@5": 0.93, precision: 0.85, abstention: 0.9, sequenceSuccess: 0.8 };
const HEAD = ["recall@5", "precision", "abstention", "sequenceSuccess"] as const;

/** One column of the report: a catalog's tools with one set of its queries and sequences. */
export type Column = Readonly<{
  catalog: string;
  set: string;
  tools: readonly ToolDefinition[];
  queries: readonly QueryCase[];
  sequences: readonly SequenceCase[];
}>;

/** Every catalog and set the benchmark scores: three committed catalogs × three sets, two MCP catalogs. */
export async function columns(): Promise<Column[]> {
  const out: Column[] = [];
  for (const set of ["public", "project", "fresh"] as const)
    for (const catalog of CATALOGS)
      out.push({
        catalog,
        set,
        tools: catalogTools(catalog),
        queries: queriesOf(catalog, set),
        sequences: sequencesOf(catalog, set),
      });
  for (const catalog of MCP_CATALOG_NAMES)
    out.push({
      catalog,
      set: "mcp",
      tools: await mcpCatalogTools(catalog),
      ...mcpCasesOf(catalog),
    });
  return out;
}

const searchSize = (tools: readonly ToolDefinition[]) => JSON.stringify(searchSpecOf(tools)).length;

export function headline(cols: readonly Column[]): string {
  const rows = cols.map((c) => {
    const s: Scores = scoreTools(c.tools, c.queries, c.sequences, searchSize);
    const cells = HEAD.map((m) => {
      const v = s[m] as number;
      return `${v.toFixed(2)}${v >= TARGETS[m] ? "" : " ✗"}`;
    });
    return `| ${c.set} | ${c.catalog} (${c.tools.length} tools) | ${c.queries.length} / ${c.sequences.length} | ${cells.join(" | ")} |`;
  });
  return [
    "| set | catalog | queries / sequences | recall@5 | precision | no-match | sequences |",
    "|---|---|---:|---:|---:|---:|---:|",
    ...rows,
  ].join("\n");
}

export function perKind(cols: readonly Column[]): string {
  const out: string[] = [];
  for (const set of [...new Set(cols.map((c) => c.set))]) {
    const table: Record<string, Record<string, KindFigures>> = {};
    for (const c of cols.filter((x) => x.set === set))
      table[c.catalog] = byKind(c.tools, c.queries);
    out.push(`${set} (per kind: n: r recall@5, p precision, nm no-match)\n${kindTable(table)}`);
  }
  return out.join("\n\n");
}

export function failureList(cols: readonly Column[]): string {
  return cols
    .map((c) => {
      const lines = failures(c.tools, c.queries, c.sequences);
      return `${c.set} / ${c.catalog}: ${lines.length} failure(s)\n${lines.map((l) => `  ${l}`).join("\n")}`;
    })
    .join("\n");
}
