import { type Bm25Index, buildIndex, idf, type Scored, score } from "./bm25.js";
import { isNumbered, partsOf, termsOfWord, withoutValues, withStems, wordsOf } from "./terms.js";
import { chooseCovering, isStray } from "./ties.js";
import {
  isCreateName,
  isQuestion,
  isReadName,
  isWriteName,
  moodOf,
  type QueryMood,
} from "./verbs.js";

/**
 * What `search_tools` finds among the turn's granted tools. Pure: it reads the grant (registration
 * order) and what is callable already, and says what loads; the engine records and advertises it.
 *
 * - `names` loads exactly the tools named, by full name or by the part after the last `__` when
 *   exactly one granted tool has it; never ranked, never bounded by `limit`. A name several
 *   granted tools share is `ambiguous` (with their full names); a name no granted tool has is
 *   `unknown`; a named tool already callable is `alreadyAvailable`.
 * - In `query`, the words that name a tool (the same rule) load it first. The words the names did
 *   not consume rank the rest (BM25 over name and description; the query's values, such as
 *   emails and numbered identifiers, left out); a tool loads only when it passes every gate of
 *   `RANKING`: the relative bar, the absolute floor, term coverage (the best's and its own against
 *   the best's), no stray match, the query's mood (`write`, `create`, `read`, `ask` or `any`: the
 *   tools it does not ask for scored lower), a shared short name's sharers narrowed by the other
 *   words, and the choice among the eligible (`ties.ts`: near ties led by the one whose name says
 *   the most of the query, names that say less left out, new name words below a tie); so a query
 *   that matches nothing well loads nothing. `limit` caps the ranked loads, never fills them.
 * - A tool outside the grant is never consulted: its name is `unknown`, its words match nothing.
 */

export const DEFAULT_SEARCH_LIMIT = 5;
export const MAX_SEARCH_LIMIT = 50;
/**
 * The ranking's settings, chosen on the benchmark (see the loop README, "Tool search"). Each is a
 * rule about kinds of query, never about one query. Each figure cited is what the benchmark
 * measured on 2026-12-07 (`bench/tool-search.bench.ts`, mean over catalogs) with that one setting
 * changed and the rest as here; "public" is the tuned set, "project", "fresh" and "mcp" never
 * tuned on.
 */
export interface Ranking {
  /**
   * How many times a word of the short name counts against the same word in the description.
   * At 1: public precision 0.868 -> 0.853 and sequences 0.952 -> 0.905, mcp precision 0.631 -> 0.604.
   */
  readonly nameWeight: number;
  /**
   * A ranked tool loads at this share of the best score or more. The seed says one half; at 0.5
   * precision drops on every set (public 0.868 -> 0.833, fresh 0.586 -> 0.573, mcp 0.631 -> 0.625)
   * and no recall is gained.
   */
  readonly relative: number;
  /**
   * The absolute floor: a ranked tool loads only at this share of the idf of a word one granted
   * tool has, or more. Without it the headline figures do not move, but a search whose best match
   * is one common word loads it: fresh sequences' load precision 1 -> 0.91 (devtools 1 -> 0.73,
   * four GitHub release tools for "remove the broken release").
   */
  readonly floor: number;
  /**
   * The best ranked match must cover this share of the query's weight (idf-weighted terms). At 0:
   * no-match public 0.963 -> 0.868, fresh 0.617 -> 0.383; recall rises (fresh 0.765 -> 0.854, mcp
   * 0.678 -> 0.743): the gate trades the recall targets against the no-match ones.
   */
  readonly minCoverage: number;
  /** Each ranked tool must cover this share of what the best match covers. At 0: precision public 0.868 -> 0.850, fresh 0.586 -> 0.568. */
  readonly coverageRatio: number;
  /**
   * A query word no granted tool has weighs this share of the rarest word's idf in coverage. At
   * 0.5: fresh no-match 0.617 -> 0.467, precision 0.586 -> 0.532 (recall 0.765 -> 0.809).
   */
  readonly unknownWeight: number;
  /**
   * A tool this close to the best score (a share of it) is a tie: it loads beside the best. With
   * no ties: public recall@5 0.953 -> 0.886 and sequences 0.952 -> 0.762, mcp sequences 0.5 -> 0.2;
   * at 0.8: precision public 0.868 -> 0.847, mcp 0.631 -> 0.619.
   */
  readonly tie: number;
  /**
   * Below a tie, a tool loads only when the query words no chosen tool matched add this share of
   * the best score. At 0: precision public 0.868 -> 0.615, fresh 0.586 -> 0.416; with no such
   * loads: public sequences 0.952 -> 0.810.
   */
  readonly gain: number;
  /**
   * A query that says no verb that changes something scores write tools this share lower. At 0:
   * precision public 0.868 -> 0.828, project 0.813 -> 0.793 (fresh sequences 0.111 -> 0.222).
   */
  readonly writePenalty: number;
  /**
   * A query that says a verb that changes something scores tools whose name only reads this share
   * lower. At 0: recall@5 public 0.953 -> 0.925, precision fresh 0.586 -> 0.488, mcp 0.631 -> 0.607.
   */
  readonly readPenalty: number;
  /**
   * In a query of this many terms or more, a tool matching only one of them, in its description
   * only, is a stray and never loads. Without it: no-match public 0.963 -> 0.804, project 1 -> 0.802.
   */
  readonly strayTerms: number;
}

export const RANKING: Ranking = Object.freeze({
  nameWeight: 3,
  relative: 0.6,
  floor: 0.6,
  minCoverage: 0.2,
  coverageRatio: 0.5,
  unknownWeight: 1,
  tie: 0.835,
  gain: 0.2,
  writePenalty: 0.3,
  readPenalty: 0.5,
  strayTerms: 3,
});
/** The best ranked match must cover this share of the query's weight (idf-weighted terms). */
export const MIN_COVERAGE = RANKING.minCoverage;
/** A ranked tool loads at this share of the best score or more. */
export const RELATIVE_THRESHOLD = RANKING.relative;

export interface SearchableTool {
  readonly name: string;
  readonly shortName: string;
  readonly description: string;
  readonly deferred: boolean;
}

export interface ToolCatalog {
  readonly tools: readonly SearchableTool[];
  readonly index: Bm25Index;
  readonly byName: ReadonlyMap<string, readonly number[]>;
  readonly byShort: ReadonlyMap<string, readonly number[]>;
  readonly byLowerName: ReadonlyMap<string, readonly number[]>;
  readonly byLowerShort: ReadonlyMap<string, readonly number[]>;
  readonly ranking: Ranking;
  /** Per tool, whether its short name carries a verb that changes something (and none that only reads). */
  readonly writes: readonly boolean[];
  /** Per tool, whether its short name carries a verb that only reads (and none that changes). */
  readonly reads: readonly boolean[];
  /** Per tool, whether its short name carries a verb that makes something new. */
  readonly creates: readonly boolean[];
  /** The absolute floor in score units (`ranking.floor` of the idf of a word one granted tool has). */
  readonly floorScore: number;
}

export interface SearchRequest {
  readonly query?: string;
  readonly names?: readonly string[];
  readonly limit?: number;
}

export interface SearchFindings {
  /** Tools this search loads, by full name: named ones first (in the order named), then ranked ones by score. */
  readonly loaded: readonly string[];
  readonly alreadyAvailable: readonly string[];
  /** Each ambiguous short name with the full names of the granted tools that share it (registration order). */
  readonly ambiguous: Readonly<Record<string, readonly string[]>>;
  readonly unknown: readonly string[];
}

function push(map: Map<string, number[]>, key: string, i: number): void {
  const list = map.get(key);
  if (list) list.push(i);
  else map.set(key, [i]);
}

/** Indexes the grant once: names for lookup, name and description for ranking. */
export function catalogOf(
  tools: readonly SearchableTool[],
  ranking: Ranking = RANKING,
): ToolCatalog {
  return withStems(() => buildCatalog(tools, ranking));
}

function buildCatalog(tools: readonly SearchableTool[], ranking: Ranking): ToolCatalog {
  const byName = new Map<string, number[]>();
  const byShort = new Map<string, number[]>();
  const byLowerName = new Map<string, number[]>();
  const byLowerShort = new Map<string, number[]>();
  tools.forEach((tool, i) => {
    push(byName, tool.name, i);
    push(byShort, tool.shortName, i);
    push(byLowerName, tool.name.toLowerCase(), i);
    push(byLowerShort, tool.shortName.toLowerCase(), i);
  });
  const index = buildIndex(tools, ranking.nameWeight);
  return {
    tools,
    index,
    byName,
    byShort,
    byLowerName,
    byLowerShort,
    ranking,
    writes: tools.map((t) => isWriteName(t.shortName)),
    reads: tools.map((t) => isReadName(t.shortName)),
    creates: tools.map((t) => isCreateName(t.shortName)),
    floorScore: ranking.floor * idf(index, 1),
  };
}

type Resolved = { readonly tool: number } | { readonly ambiguous: readonly number[] } | undefined;

/** A full name, else a short name: exact spelling first, then ignoring case; several tools sharing one is ambiguous. */
export function resolveName(catalog: ToolCatalog, name: string): Resolved {
  const lower = name.toLowerCase();
  const lookups: [ReadonlyMap<string, readonly number[]>, string][] = [
    [catalog.byName, name],
    [catalog.byShort, name],
    [catalog.byLowerName, lower],
    [catalog.byLowerShort, lower],
  ];
  for (const [map, key] of lookups) {
    const found = map.get(key);
    if (!found || found.length === 0) continue;
    return found.length === 1 ? { tool: found[0] as number } : { ambiguous: found };
  }
  return undefined;
}

class Findings {
  readonly loaded: string[] = [];
  readonly alreadyAvailable: string[] = [];
  readonly ambiguous: Record<string, readonly string[]> = {};
  readonly unknown: string[] = [];
  /** Tools this search has named or ranked, so none is reported twice. */
  readonly seen = new Set<number>();

  constructor(
    readonly catalog: ToolCatalog,
    readonly callable: (name: string) => boolean,
  ) {}

  nameOf(i: number): string {
    return (this.catalog.tools[i] as SearchableTool).name;
  }

  /** Loads a tool, or reports it already callable; says whether it loaded now. */
  take(i: number): boolean {
    if (this.seen.has(i)) return false;
    this.seen.add(i);
    const name = this.nameOf(i);
    if (this.callable(name)) this.alreadyAvailable.push(name);
    else this.loaded.push(name);
    return !this.callable(name);
  }

  /** Resolves one name: the tool it names (loaded or reported), else undefined (reported ambiguous, or unknown when asked). */
  name(word: string, reportUnknown: boolean): number | undefined {
    const found = resolveName(this.catalog, word);
    if (found && "tool" in found) return found.tool;
    if (found) {
      if (!Object.hasOwn(this.ambiguous, word))
        this.ambiguous[word] = found.ambiguous.map((i) => this.nameOf(i));
    } else if (reportUnknown && !this.unknown.includes(word)) {
      this.unknown.push(word);
    }
    return undefined;
  }

  result(): SearchFindings {
    return {
      loaded: this.loaded,
      alreadyAvailable: this.alreadyAvailable,
      ambiguous: this.ambiguous,
      unknown: this.unknown,
    };
  }
}

/** Runs one search against the grant's catalog. `callable` says which granted tools the model can call already. */
export function findTools(
  catalog: ToolCatalog,
  callable: (name: string) => boolean,
  request: SearchRequest,
): SearchFindings {
  const findings = new Findings(catalog, callable);
  for (const name of request.names ?? []) {
    const tool = findings.name(name, true);
    if (tool !== undefined) findings.take(tool);
  }
  if (request.query !== undefined)
    queryLoads(findings, request.query, request.limit ?? DEFAULT_SEARCH_LIMIT);
  return findings.result();
}

/**
 * The query's named tools load first (never capped); the other words rank the rest. The bar is half
 * the best score among the granted tools — already callable ones included, and a named tool scored
 * on the whole query, since the query named it — and the best ranked match must cover `MIN_COVERAGE`.
 */
function queryLoads(findings: Findings, query: string, limit: number): void {
  const { catalog, callable } = findings;
  const named: number[] = [];
  const rest: string[] = [];
  const restWords: string[] = [];
  const all: string[] = [];
  const shared: number[] = [];
  const others: string[] = [];
  let loadedByName = 0;
  for (const word of wordsOf(withoutValues(query))) {
    const tool = findings.name(word, false);
    // A value the tool will be given (`pi_123`, an email) says nothing about which tool.
    if (tool === undefined && isNumbered(word)) continue;
    termsOfWord(word, all);
    if (tool === undefined) {
      termsOfWord(word, rest);
      const sharers = resolveName(catalog, word);
      if (sharers && "ambiguous" in sharers) shared.push(...sharers.ambiguous);
      else termsOfWord(word, others);
      // A server is named by its word whole ("GitHub" is also the parts git, hub).
      restWords.push(word.toLowerCase(), ...partsOf(word));
      continue;
    }
    named.push(tool);
    if (findings.take(tool)) loadedByName += 1;
  }
  const room = limit - loadedByName;
  if (room <= 0 || rest.length === 0) return;
  const loadedBefore = findings.loaded.length;
  const { ranking } = catalog;
  const [penalised, penalty] = penaltyOf(catalog, moodOf(rest, isQuestion(query)));
  const outvoted = outvotedSharers(catalog, shared, others);
  const ranked = score(catalog.index, rest, ranking.unknownWeight, restWords)
    .filter((s) => !findings.seen.has(s.index) && !isStray(s, ranking) && !outvoted.has(s.index))
    .map((s) => (penalty > 0 && penalised[s.index] ? { ...s, score: s.score * (1 - penalty) } : s));
  const top = best(ranked);
  if (!top || top.coverage < ranking.minCoverage) return;
  const namedTop =
    named.length > 0
      ? (best(
          score(catalog.index, all, ranking.unknownWeight).filter((s) => named.includes(s.index)),
        )?.score ?? 0)
      : 0;
  const bar = Math.max(ranking.relative * Math.max(top.score, namedTop), catalog.floorScore);
  const cover = ranking.coverageRatio * top.coverage;
  const eligible = ranked
    .filter((s) => s.score >= bar && s.coverage >= cover)
    .sort((a, b) => b.score - a.score || a.index - b.index);
  // A best match the model can call already did not answer it: a tie whose name says less still may.
  const held = eligible[0] !== undefined && !isCandidate(catalog, callable, eligible[0]);
  for (const s of chooseCovering(eligible, top.score, ranking, held)) {
    if (room - (findings.loaded.length - loadedBefore) <= 0) break;
    if (isCandidate(catalog, callable, s)) findings.take(s.index);
  }
}

/** Which tools a query's mood scores lower, and by what share: reading ones for a write, writing ones for a read (more for a question), all but creating ones for a create. */
function penaltyOf(catalog: ToolCatalog, mood: QueryMood): readonly [readonly boolean[], number] {
  const { ranking } = catalog;
  if (mood === "write") return [catalog.reads, ranking.readPenalty];
  if (mood === "read") return [catalog.writes, ranking.writePenalty];
  if (mood === "ask") return [catalog.writes, ranking.readPenalty];
  if (mood === "create") return [catalog.creates.map((c) => !c), ranking.readPenalty];
  return [catalog.reads, 0];
}

/**
 * The tools sharing a short name the query spells that its other words rule out: when those words
 * match some of the sharers, the ones they match nothing of (`projects_list openshift`: the
 * Kubernetes one, whose description says OpenShift, not GitHub's). With no other word, or none
 * matching any sharer, every sharer stays in the ranking.
 */
function outvotedSharers(
  catalog: ToolCatalog,
  shared: readonly number[],
  others: readonly string[],
): ReadonlySet<number> {
  if (shared.length === 0 || others.length === 0) return new Set();
  const sharers = new Set(shared);
  const matched = new Set(
    score(catalog.index, others, catalog.ranking.unknownWeight)
      .filter((s) => sharers.has(s.index))
      .map((s) => s.index),
  );
  if (matched.size === 0) return new Set();
  return new Set([...sharers].filter((i) => !matched.has(i)));
}

/** A tool a ranking may load: deferred and not callable yet. */
function isCandidate(
  catalog: ToolCatalog,
  callable: (name: string) => boolean,
  s: Scored,
): boolean {
  const tool = catalog.tools[s.index] as SearchableTool;
  return tool.deferred && !callable(tool.name);
}

/** The highest score; ties go to the earlier registration. */
function best(scored: readonly Scored[]): Scored | undefined {
  let top: Scored | undefined;
  for (const s of scored) if (!top || s.score > top.score) top = s;
  return top;
}
