import { COMPOUND, partsOf, termsOf, termsOfWord } from "./terms.js";

/**
 * BM25 over the turn's granted tools, each a document of its name and description. A term's
 * weight (idf) grows as fewer of the granted tools share it, so a word every tool has says little
 * and a word one tool has says much. Name terms count `NAME_WEIGHT` times: a word in a tool's name
 * is stronger evidence than the same word somewhere in its description.
 */

const K1 = 1.2;
const B = 0.75;
const NAME_WEIGHT = 3;
/** The server prefix (`github__`) is shared by a whole server's tools: it counts as a description word. */
const PREFIX_WEIGHT = 1;
/** A query term no granted tool has may still begin terms some have ("docs" -> "documentation"). */
const PREFIX_MIN = 3;
const PREFIX_FACTOR = 0.5;

export interface IndexedDoc {
  readonly name: string;
  readonly terms: ReadonlyMap<string, number>;
  readonly length: number;
}

export interface Bm25Index {
  readonly docs: readonly IndexedDoc[];
  readonly df: ReadonlyMap<string, number>;
  readonly avgLength: number;
}

/** One query term, resolved against the index: the document terms it matches and how much each counts. */
interface QueryTerm {
  readonly matches: readonly { readonly term: string; readonly idf: number; readonly factor: number }[];
  /** What the term would add to a document that matched it fully (for coverage). */
  readonly weight: number;
}

function addTerm(terms: Map<string, number>, term: string, by: number): void {
  terms.set(term, (terms.get(term) ?? 0) + by);
}

/** The terms of a tool's name: the server prefix's words, and the short name's compound and parts. */
function nameTerms(name: string): { readonly prefix: readonly string[]; readonly short: readonly string[] } {
  const at = name.lastIndexOf("__");
  if (at < 0 || at + 2 >= name.length) return { prefix: [], short: termsOf(name) };
  const short: string[] = [];
  termsOfWord(name.slice(at + 2), short);
  return { prefix: partsOf(name.slice(0, at)), short };
}

export function buildIndex(tools: readonly { readonly name: string; readonly description: string }[]): Bm25Index {
  const docs: IndexedDoc[] = [];
  const df = new Map<string, number>();
  let total = 0;
  for (const tool of tools) {
    const terms = new Map<string, number>();
    let length = 0;
    const name = nameTerms(tool.name);
    for (const term of name.prefix) {
      addTerm(terms, term, PREFIX_WEIGHT);
      length += PREFIX_WEIGHT;
    }
    for (const term of name.short) {
      addTerm(terms, term, NAME_WEIGHT);
      length += NAME_WEIGHT;
    }
    for (const term of termsOf(tool.description)) {
      addTerm(terms, term, 1);
      length += 1;
    }
    for (const term of terms.keys()) df.set(term, (df.get(term) ?? 0) + 1);
    docs.push({ name: tool.name, terms, length });
    total += length;
  }
  return { docs, df, avgLength: docs.length > 0 ? total / docs.length : 1 };
}

function idf(index: Bm25Index, df: number): number {
  const n = index.docs.length;
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/** Resolves the query's distinct terms; an unknown term falls back to the terms it begins, at half weight. */
function resolve(index: Bm25Index, terms: readonly string[]): QueryTerm[] {
  const out: QueryTerm[] = [];
  const unseenWeight = idf(index, 0);
  for (const term of new Set(terms)) {
    const df = index.df.get(term);
    if (df !== undefined) {
      const w = idf(index, df);
      out.push({ matches: [{ term, idf: w, factor: 1 }], weight: w });
      continue;
    }
    const matches: { term: string; idf: number; factor: number }[] = [];
    if (term.length >= PREFIX_MIN && !term.startsWith(COMPOUND)) {
      for (const [known, n] of index.df) if (known.startsWith(term)) matches.push({ term: known, idf: idf(index, n), factor: PREFIX_FACTOR });
    }
    // A compound term is the short name spelled whole: its parts carry the meaning when no tool has it.
    if (!term.startsWith(COMPOUND)) out.push({ matches, weight: unseenWeight });
  }
  return out;
}

export interface Scored {
  readonly index: number;
  readonly score: number;
  /** The share of the query's weight this document matched, 0..1. */
  readonly coverage: number;
}

/** Scores every document for the query terms; documents that match nothing are left out. */
export function score(index: Bm25Index, terms: readonly string[]): Scored[] {
  const query = resolve(index, terms);
  const totalWeight = query.reduce((sum, q) => sum + q.weight, 0);
  const out: Scored[] = [];
  index.docs.forEach((doc, i) => {
    let s = 0;
    let covered = 0;
    const norm = K1 * (1 - B + (B * doc.length) / index.avgLength);
    for (const q of query) {
      let best = 0;
      let factor = 0;
      for (const m of q.matches) {
        const tf = doc.terms.get(m.term);
        if (tf === undefined) continue;
        const part = m.factor * m.idf * ((tf * (K1 + 1)) / (tf + norm));
        if (part > best) [best, factor] = [part, m.factor];
      }
      s += best;
      // A term matched only by a longer term it begins covers the query by that same share.
      covered += q.weight * factor;
    }
    if (s > 0) out.push({ index: i, score: s, coverage: totalWeight > 0 ? covered / totalWeight : 0 });
  });
  return out;
}
