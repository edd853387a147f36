import { COMPOUND, partsOf, stem, termsOf, termsOfWord, wordsIn, wordsOf } from "./terms.js";

/**
 * BM25 over the turn's granted tools, each a document of its name and description. A term's
 * weight (idf) grows as fewer of the granted tools share it, so a word every tool has says little
 * and a word one tool has says much. Name terms count `NAME_WEIGHT` times: a word in a tool's name
 * is stronger evidence than the same word somewhere in its description.
 */

const K1 = 1.2;
const B = 0.75;
/** The server prefix (`github__`) is shared by a whole server's tools: it counts as a description word. */
const PREFIX_WEIGHT = 1;
/**
 * A query term no granted tool has may still begin terms some have ("docs" -> "documentation"),
 * at half weight. Without it (2026-12-07): public recall@5 0.953 -> 0.933, fresh 0.765 -> 0.750
 * (its precision rises 0.586 -> 0.601; the recall targets are the further off).
 */
const PREFIX_MIN = 3;
const PREFIX_FACTOR = 0.5;

export interface IndexedDoc {
  readonly name: string;
  readonly terms: ReadonlyMap<string, number>;
  /** The terms of the tool's short name (and the words it splits into). */
  readonly nameTerms: ReadonlySet<string>;
  readonly length: number;
}

export interface Bm25Index {
  readonly docs: readonly IndexedDoc[];
  readonly df: ReadonlyMap<string, number>;
  readonly avgLength: number;
  /** The terms of the granted tools' short names (a query word that begins one also matches it). */
  readonly nameTerms: readonly string[];
  /**
   * Server words: a word of a server prefix (`stripe__`) that no tool outside that server has, with
   * the server's tools. A query that says it narrows the ranking to them.
   */
  readonly servers: ReadonlyMap<string, ReadonlySet<number>>;
  /** Each term's documents and its frequency in each (the ranking reads only these). */
  readonly postings: ReadonlyMap<string, readonly Posting[]>;
  /** Each document's BM25 length normalisation. */
  readonly norms: Float64Array;
  /** Every term, and the name terms, sorted (a prefix lookup is a binary search). */
  readonly sortedTerms: readonly string[];
  readonly sortedNames: readonly string[];
}

interface Posting {
  readonly doc: number;
  readonly tf: number;
  /** Whether the term is in the tool's short name. */
  readonly named: boolean;
}

/**
 * The shortest half of a joined name word (`usergroups` = `user` + `groups`) the index splits off.
 * Without the split (2026-12-07): public recall@5 0.953 -> 0.943, project precision 0.813 -> 0.803.
 */
const SPLIT_MIN = 3;

/** One query term, resolved against the index: the document terms it matches and how much each counts. */
interface QueryTerm {
  readonly matches: readonly {
    readonly term: string;
    readonly idf: number;
    readonly factor: number;
  }[];
  /** What the term would add to a document that matched it fully (for coverage). */
  readonly weight: number;
}

function addTerm(terms: Map<string, number>, term: string, by: number): void {
  terms.set(term, (terms.get(term) ?? 0) + by);
}

/** The terms of a tool's name: the server prefix's words, and the short name's compound and parts. */
function nameTerms(name: string): {
  readonly prefix: readonly string[];
  readonly short: readonly string[];
  /** The short name's words, not stemmed: a joined one is split before it is stemmed. */
  readonly words: readonly string[];
} {
  const at = name.lastIndexOf("__");
  if (at < 0 || at + 2 >= name.length)
    return { prefix: [], short: termsOf(name), words: wordsOf(name).flatMap(wordsIn) };
  const short: string[] = [];
  termsOfWord(name.slice(at + 2), short);
  return { prefix: partsOf(name.slice(0, at)), short, words: wordsIn(name.slice(at + 2)) };
}

/**
 * A short-name part the catalog's own words spell in two (`usergroups`, `freebusy`, `breadcrumbs`):
 * the two words, when both occur among the granted tools' terms; else nothing.
 */
function splitOf(
  part: string,
  vocabulary: { has(term: string): boolean; readonly size: number },
): readonly string[] {
  if (part.startsWith(COMPOUND) || vocabulary.size === 0 || part.length < 2 * SPLIT_MIN) return [];
  for (let at = SPLIT_MIN; at <= part.length - SPLIT_MIN; at++) {
    const [head, tail] = [part.slice(0, at), part.slice(at)];
    const found = [head, stem(head)].find((h) => vocabulary.has(h));
    const rest = [tail, stem(tail)].find((t) => vocabulary.has(t));
    if (found !== undefined && rest !== undefined) return [found, rest];
  }
  return [];
}

/** A query term no granted tool has, as the two catalog words it joins (`openshift`: open, shift), or itself. */
function splitOrSelf(term: string, vocabulary: ReadonlyMap<string, number>): readonly string[] {
  const halves = splitOf(term, vocabulary);
  return halves.length === 2 ? halves : [term];
}

export function buildIndex(
  tools: readonly { readonly name: string; readonly description: string }[],
  nameWeight: number,
): Bm25Index {
  const named = tools.map((tool) => ({
    name: nameTerms(tool.name),
    description: termsOf(tool.description),
  }));
  const vocabulary = new Set<string>();
  for (const { name, description } of named)
    for (const term of [...name.short, ...description]) vocabulary.add(term);
  const docs: IndexedDoc[] = [];
  const df = new Map<string, number>();
  const nameSet = new Set<string>();
  const serverDocs = new Map<string, Set<number>>();
  let total = 0;
  named.forEach(({ name, description }, i) => {
    const terms = new Map<string, number>();
    const inName = new Set<string>();
    let length = 0;
    const add = (term: string, by: number) => {
      addTerm(terms, term, by);
      length += by;
    };
    for (const term of name.prefix) {
      add(term, PREFIX_WEIGHT);
      const server = serverDocs.get(term) ?? new Set<number>();
      serverDocs.set(term, server.add(i));
    }
    for (const term of name.short) {
      add(term, nameWeight);
      inName.add(term);
      if (!term.startsWith(COMPOUND)) nameSet.add(term);
    }
    // Split as written (`stacktrace` is stack + trace), since a stem's tail is no word's stem.
    for (const word of name.words) {
      for (const half of splitOf(word, vocabulary)) {
        add(half, nameWeight);
        inName.add(half);
      }
    }
    for (const term of description) add(term, 1);
    for (const term of terms.keys()) df.set(term, (df.get(term) ?? 0) + 1);
    docs.push({ name: (tools[i] as { name: string }).name, terms, nameTerms: inName, length });
    total += length;
  });
  // A server word another server's tool also uses (`time`, `fetch`) is an ordinary word, not a server.
  const servers = new Map([...serverDocs].filter(([term, server]) => df.get(term) === server.size));
  const avgLength = docs.length > 0 ? total / docs.length : 1;
  const postings = new Map<string, Posting[]>();
  docs.forEach((doc, i) => {
    for (const [term, tf] of doc.terms) {
      const posting = { doc: i, tf, named: doc.nameTerms.has(term) };
      const list = postings.get(term);
      if (list) list.push(posting);
      else postings.set(term, [posting]);
    }
  });
  const norms = Float64Array.from(docs, (doc) => K1 * (1 - B + (B * doc.length) / avgLength));
  const names = [...nameSet];
  return {
    docs,
    df,
    avgLength,
    nameTerms: names,
    servers,
    postings,
    norms,
    sortedTerms: [...df.keys()].sort(),
    sortedNames: [...names].sort(),
  };
}

export function idf(index: Bm25Index, df: number): number {
  const n = index.docs.length;
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/** The sorted terms that begin with `prefix`, by binary search. */
function withPrefix(sorted: readonly string[], prefix: string): string[] {
  let [lo, hi] = [0, sorted.length];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as string) < prefix) lo = mid + 1;
    else hi = mid;
  }
  const out: string[] = [];
  for (let i = lo; i < sorted.length && (sorted[i] as string).startsWith(prefix); i++)
    out.push(sorted[i] as string);
  return out;
}

/** The longer name terms a query term begins ("doc" -> "documentation"). */
function nameStems(index: Bm25Index, term: string): string[] {
  return withPrefix(index.sortedNames, term).filter((known) => known.length > term.length);
}

/**
 * Resolves the query's distinct terms; an unknown term falls back to the terms it begins, at half
 * weight. A term no granted tool has weighs `unknownWeight` of the rarest word's idf in coverage.
 */
function resolve(index: Bm25Index, terms: readonly string[], unknownWeight: number): QueryTerm[] {
  const out: QueryTerm[] = [];
  const unseenWeight = unknownWeight * idf(index, 0);
  for (const term of new Set(
    terms.flatMap((t) => (index.df.has(t) ? [t] : splitOrSelf(t, index.df))),
  )) {
    const df = index.df.get(term);
    if (df !== undefined) {
      const w = idf(index, df);
      const matches = [{ term, idf: w, factor: 1 }];
      // A known word that begins a longer name word matches it too ("doc" -> "documentation").
      if (term.length >= PREFIX_MIN && !term.startsWith(COMPOUND)) {
        for (const known of nameStems(index, term))
          matches.push({
            term: known,
            idf: idf(index, index.df.get(known) ?? 1),
            factor: PREFIX_FACTOR,
          });
      }
      out.push({ matches, weight: w });
      continue;
    }
    const matches: { term: string; idf: number; factor: number }[] = [];
    if (term.length >= PREFIX_MIN && !term.startsWith(COMPOUND)) {
      const begun = withPrefix(index.sortedTerms, term);
      for (const known of new Set([...begun, ...nameStems(index, term)]))
        matches.push({
          term: known,
          idf: idf(index, index.df.get(known) ?? 1),
          factor: PREFIX_FACTOR,
        });
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
  /** What each of the query's distinct terms added to the score (0 where it matched nothing). */
  readonly parts: Float64Array;
  /** Per query term, 1 when the tool's short name matched it. */
  readonly named: Uint8Array;
}

/** The tools of the servers the query names by an exclusive server word, or undefined when it names none. */
function serversNamed(index: Bm25Index, terms: readonly string[]): ReadonlySet<number> | undefined {
  let allowed: Set<number> | undefined;
  for (const term of terms) {
    const server = index.servers.get(term);
    if (!server) continue;
    allowed ??= new Set();
    for (const i of server) allowed.add(i);
  }
  return allowed;
}

/**
 * Scores every document for the query terms; documents that match nothing are left out, and so
 * are the tools of other servers when the query names a server by a word only that server uses.
 */
export function score(
  index: Bm25Index,
  terms: readonly string[],
  unknownWeight = 1,
  words: readonly string[] = terms,
): Scored[] {
  const query = resolve(index, terms, unknownWeight);
  const totalWeight = query.reduce((sum, q) => sum + q.weight, 0);
  const allowed = serversNamed(index, words);
  // One flat row per document, allocated once per search; a document is read only if a posting touched it.
  const width = query.length;
  const parts = new Float64Array(index.docs.length * width);
  const factors = new Float64Array(index.docs.length * width);
  const named = new Uint8Array(index.docs.length * width);
  const touched = new Uint8Array(index.docs.length);
  query.forEach((q, at) => {
    for (const m of q.matches) {
      for (const { doc, tf, named: inName } of index.postings.get(m.term) ?? []) {
        if (allowed && !allowed.has(doc)) continue;
        const part = m.factor * m.idf * ((tf * (K1 + 1)) / (tf + (index.norms[doc] as number)));
        const cell = doc * width + at;
        touched[doc] = 1;
        if (part > (parts[cell] as number)) {
          parts[cell] = part;
          factors[cell] = m.factor;
        }
        if (inName) named[cell] = 1;
      }
    }
  });
  const out: Scored[] = [];
  for (let i = 0; i < touched.length; i++) {
    if (touched[i] === 0) continue;
    let s = 0;
    let covered = 0;
    // A term matched only by a longer term it begins covers the query by that same share.
    for (let at = 0; at < width; at++) {
      s += parts[i * width + at] as number;
      covered += (query[at] as QueryTerm).weight * (factors[i * width + at] as number);
    }
    if (s > 0)
      out.push({
        index: i,
        score: s,
        coverage: totalWeight > 0 ? covered / totalWeight : 0,
        parts: parts.subarray(i * width, (i + 1) * width),
        named: named.subarray(i * width, (i + 1) * width),
      });
  }
  return out;
}
