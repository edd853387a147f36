import { readFileSync } from "node:fs";
import { type Msg, SEARCH_TOOLS_NAME, type ToolResultBlock } from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { searchSpecOf } from "../src/search/loads.js";
import { catalogOf, findTools } from "../src/search/tool-search.js";
import { completed, harness, log } from "./harness.js";
import {
  CATALOGS,
  type CatalogName,
  catalogTools,
  overall,
  QUERY_SETS,
  type QuerySet,
  queriesOf,
  runSequence,
  type Scores,
  scoreCatalog,
  sequencesOf,
  table,
} from "./tool-search-score.js";

/**
 * The deterministic tool-search benchmark (spec: tool-search-benchmark). The metrics are defined in
 * tool-search-score.ts; the committed baseline may only tighten: a score below it fails, and a
 * better score should be written into it. `TOOL_SEARCH_REPORT=1` prints the figures as baseline JSON.
 */

type Figures = Record<string, Scores>;
const BASELINE = JSON.parse(
  readFileSync(new URL("./tool-search-baseline.json", import.meta.url), "utf8"),
) as Record<QuerySet, Figures>;
const searchSize = (tools: Parameters<typeof searchSpecOf>[0]) =>
  JSON.stringify(searchSpecOf(tools)).length;

function figuresOf(set: QuerySet): Figures {
  const per = Object.fromEntries(
    CATALOGS.map((name) => [name, scoreCatalog(name, searchSize, set)]),
  ) as Record<CatalogName, Scores>;
  return { ...per, overall: overall(per) };
}

const measured = Object.fromEntries(QUERY_SETS.map((set) => [set, figuresOf(set)])) as Record<
  QuerySet,
  Figures
>;

// The issue's table, every run: overall figures per query set (public = tune + check; project and fresh = never tuned on).
console.log(
  `tool-search benchmark (overall, mean of the three catalogs)\n${table(Object.fromEntries(QUERY_SETS.map((set) => [set, measured[set].overall as Scores])))}`,
);
/** The issue's targets on the public data (overall): printed beside the figures, gated only through the baseline. */
const TARGETS: Scores = { "recall@5": 0.95, precision: 0.85, abstention: 0.9 };
const publicOverall = measured.public.overall as Scores;
console.log(
  `targets on the public set: ${Object.entries(TARGETS)
    .map(
      ([m, t]) =>
        `${m} ${(publicOverall[m] as number).toFixed(2)} (target ${t}${(publicOverall[m] as number) >= t ? ", met" : ", NOT met"})`,
    )
    .join("; ")}`,
);
if (process.env.TOOL_SEARCH_REPORT) console.log(JSON.stringify(measured, null, 2));

describe("tool-search benchmark: scores never drop below the committed baseline", () => {
  it("the baseline covers exactly the query sets, catalogs and metrics measured", () => {
    expect(Object.keys(BASELINE).sort()).toEqual([...QUERY_SETS].sort());
    for (const set of QUERY_SETS) {
      expect(Object.keys(BASELINE[set]).sort()).toEqual(Object.keys(measured[set]).sort());
      for (const [name, scores] of Object.entries(measured[set]))
        expect(Object.keys(BASELINE[set][name] ?? {}).sort()).toEqual(Object.keys(scores).sort());
    }
  });

  for (const set of QUERY_SETS) {
    for (const name of [...CATALOGS, "overall"]) {
      it(`${set} / ${name}: every metric at or above its baseline`, () => {
        const base = BASELINE[set][name] as Scores;
        const below = Object.entries(measured[set][name] as Scores).filter(
          ([metric, score]) => score < (base[metric] as number),
        );
        expect(below.map(([metric, score]) => `${metric} ${score} < ${base[metric]}`)).toEqual([]);
      });
    }
  }

  it("every exact-name query (fullname, shortname, ambiguous, unknown names) loads exactly its gold", () => {
    const wrong: string[] = [];
    for (const set of ["public", "project", "fresh"] as const) {
      for (const name of CATALOGS) {
        const catalog = catalogOf(catalogTools(name));
        for (const q of queriesOf(name, set)) {
          if (!q.names) continue;
          const { loaded } = findTools(catalog, () => false, { names: q.names });
          if (JSON.stringify([...loaded].sort()) !== JSON.stringify([...q.gold].sort()))
            wrong.push(`${q.id}: ${loaded.join(",")}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it("every score is a share in 0..1, and the search is deterministic", () => {
    for (const figures of Object.values(measured))
      for (const scores of Object.values(figures))
        for (const v of Object.values(scores)) expect(v >= 0 && v <= 1).toBe(true);
    expect(scoreCatalog("commerce", searchSize)).toEqual(measured.public.commerce);
  });
});

/** The scripted model calls search_tools once per step of the sequence, then answers. */
function sequenceThroughEngine(name: CatalogName, seq: ReturnType<typeof sequencesOf>[number]) {
  const tools = catalogTools(name);
  const script = [
    ...seq.steps.map((step, i) =>
      scriptedToolCall({
        id: `s${i}`,
        name: SEARCH_TOOLS_NAME,
        input: {
          ...(step.query ? { query: step.query } : {}),
          ...(step.names ? { names: step.names } : {}),
        },
      }),
    ),
    scriptedText("done"),
  ];
  return { h: harness({ tools, script, limits: { maxCalls: seq.steps.length + 1 } }), tools };
}

function searchResults(messages: readonly Msg[]): ToolResultBlock[] {
  return messages.flatMap((m) =>
    m.blocks.filter(
      (b): b is ToolResultBlock => b.type === "tool_result" && b.name === SEARCH_TOOLS_NAME,
    ),
  );
}

describe("tool-search benchmark: the engine loads what the benchmark scores", () => {
  for (const name of CATALOGS) {
    it(`${name}: each sequence run as one turn records the same loads, advertised in load order`, async () => {
      for (const seq of [
        ...sequencesOf(name),
        ...sequencesOf(name, "project"),
        ...sequencesOf(name, "fresh"),
      ]) {
        const { h, tools } = sequenceThroughEngine(name, seq);
        const outcome = await h.run();
        completed(outcome);
        const expected = runSequence(catalogOf(tools), seq).map((f) => f.loaded);
        expect(searchResults(log(outcome)).map((b) => b.loads ?? [])).toEqual(expected);
        const order = [...new Set(expected.flat())];
        expect(h.model.requests.at(-1)?.tools.map((t) => t.name)).toEqual([
          SEARCH_TOOLS_NAME,
          ...order,
        ]);
        expect(h.trail("access").map((e) => `${e.tool}:${e.action}:${e.resource}`)).toEqual(
          expected.flat().map((n) => `${SEARCH_TOOLS_NAME}:load:${n}`),
        );
      }
    });
  }

  for (const name of CATALOGS) {
    it(`${name}: each query, public, project-written and fresh, run as a one-search turn loads what the score counted`, async () => {
      const catalog = catalogOf(catalogTools(name));
      for (const q of [
        ...queriesOf(name),
        ...queriesOf(name, "project"),
        ...queriesOf(name, "fresh"),
      ]) {
        const { h } = sequenceThroughEngine(name, { id: q.id, steps: [q] });
        const outcome = await h.run();
        completed(outcome);
        const expected = findTools(catalog, () => false, {
          ...(q.query ? { query: q.query } : {}),
          ...(q.names ? { names: q.names } : {}),
        }).loaded;
        expect(
          searchResults(log(outcome)).map((b) => b.loads ?? []),
          q.id,
        ).toEqual([expected]);
      }
    });
  }
});
