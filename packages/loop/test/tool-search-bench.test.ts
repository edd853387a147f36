import { readFileSync } from "node:fs";
import { type Msg, SEARCH_TOOLS_NAME, type ToolResultBlock } from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { searchSpecOf } from "../src/search/loads.js";
import { catalogOf } from "../src/search/tool-search.js";
import { completed, harness, log } from "./harness.js";
import { CATALOGS, type CatalogName, catalogTools, overall, runSequence, type Scores, scoreCatalog, sequencesOf } from "./tool-search-score.js";

/**
 * The deterministic tool-search benchmark (spec: tool-search-benchmark). The metrics are defined in
 * tool-search-score.ts; the committed baseline may only tighten: a score below it fails, and a
 * better score should be written into it. `TOOL_SEARCH_REPORT=1` prints the figures as baseline JSON.
 */

const BASELINE = JSON.parse(readFileSync(new URL("./tool-search-baseline.json", import.meta.url), "utf8")) as Record<string, Scores>;
const searchSize = (tools: Parameters<typeof searchSpecOf>[0]) => JSON.stringify(searchSpecOf(tools)).length;
const per = Object.fromEntries(CATALOGS.map((name) => [name, scoreCatalog(name, searchSize)])) as Record<CatalogName, Scores>;
const figures: Record<string, Scores> = { ...per, overall: overall(per) };

if (process.env.TOOL_SEARCH_REPORT) console.log(JSON.stringify(figures, null, 2));

describe("tool-search benchmark: scores never drop below the committed baseline", () => {
  it("the baseline covers exactly the catalogs and metrics measured", () => {
    expect(Object.keys(BASELINE).sort()).toEqual(Object.keys(figures).sort());
    for (const [name, scores] of Object.entries(figures)) expect(Object.keys(BASELINE[name] ?? {}).sort()).toEqual(Object.keys(scores).sort());
  });

  for (const name of [...CATALOGS, "overall"]) {
    it(`${name}: every metric at or above its baseline`, () => {
      const below = Object.entries(figures[name] as Scores).filter(([metric, score]) => score < ((BASELINE[name] as Scores)[metric] as number));
      expect(below.map(([metric, score]) => `${metric} ${score} < ${(BASELINE[name] as Scores)[metric]}`)).toEqual([]);
    });
  }

  it("every score is a share in 0..1, and the search is deterministic", () => {
    for (const scores of Object.values(figures)) for (const v of Object.values(scores)) expect(v >= 0 && v <= 1).toBe(true);
    expect(scoreCatalog("commerce", searchSize)).toEqual(per.commerce);
  });
});

/** The scripted model calls search_tools once per step of the sequence, then answers. */
function sequenceThroughEngine(name: CatalogName, seq: ReturnType<typeof sequencesOf>[number]) {
  const tools = catalogTools(name);
  const script = [
    ...seq.steps.map((step, i) => scriptedToolCall({ id: `s${i}`, name: SEARCH_TOOLS_NAME, input: { ...(step.query ? { query: step.query } : {}), ...(step.names ? { names: step.names } : {}) } })),
    scriptedText("done"),
  ];
  return { h: harness({ tools, script, limits: { maxCalls: seq.steps.length + 1 } }), tools };
}

function searchResults(messages: readonly Msg[]): ToolResultBlock[] {
  return messages.flatMap((m) => m.blocks.filter((b): b is ToolResultBlock => b.type === "tool_result" && b.name === SEARCH_TOOLS_NAME));
}

describe("tool-search benchmark: the engine loads what the benchmark scores", () => {
  for (const name of CATALOGS) {
    it(`${name}: each sequence run as one turn records the same loads, advertised in load order`, async () => {
      for (const seq of sequencesOf(name)) {
        const { h, tools } = sequenceThroughEngine(name, seq);
        const outcome = await h.run();
        completed(outcome);
        const expected = runSequence(catalogOf(tools), seq).map((f) => f.loaded);
        expect(searchResults(log(outcome)).map((b) => b.loads ?? [])).toEqual(expected);
        const order = [...new Set(expected.flat())];
        expect(h.model.requests.at(-1)?.tools.map((t) => t.name)).toEqual([SEARCH_TOOLS_NAME, ...order]);
        expect(h.trail("access").map((e) => `${e.tool}:${e.action}:${e.resource}`)).toEqual(expected.flat().map((n) => `${SEARCH_TOOLS_NAME}:load:${n}`));
      }
    });
  }
});
