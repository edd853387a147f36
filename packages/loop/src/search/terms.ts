/**
 * The words of tool names, descriptions and search queries, reduced to terms the ranking compares.
 * A word is a run of letters and digits joined by `_` or `-` (so a tool name stays one word); its
 * parts are split at the joiners and at lower-to-upper case changes, lower-cased and stemmed. A
 * word of several parts also yields one compound term, so a query that spells a short name
 * (`create_invoice`) matches that name as a whole, and more strongly than its parts alone.
 */

import { stemmer as porter } from "@orama/stemmers/english";

const WORD = /[A-Za-z0-9]+(?:[_-]+[A-Za-z0-9]+)*/g;
const JOINERS = /[_-]+/;
const CASE_CHANGE = /([a-z0-9])([A-Z])/g;
const DIGITS = /^[0-9]+$/;
/** Marks a compound term, so it can never equal a single part. */
export const COMPOUND = "~";

/** Function words that say nothing about which tool is meant. */
const STOPWORDS = new Set(
  (
    "a an the and or nor but if then else of to in on at by for from with without into onto over under about as " +
    "is are was were be been being am do does did done have has had can could should would will shall may might must " +
    "i me my mine we us our ours you your yours it its this that these those there here which who whom whose what " +
    "when where why how all any some each every no not only just also so than too very please now via per their them they he she his her " +
    "up down out again once more most other such own same s t"
  ).split(" "),
);

/**
 * A word's stem: the Porter stemmer of `@orama/stemmers` (pure, no I/O), so "replies" and "reply",
 * "committed" and "commit", "subscription" and "subscribe" meet on one term.
 */
export function stem(word: string): string {
  // Three letters or fewer are kept as written: Porter reads `ios`, `pos` as plurals (`io`, `po`);
  // stemming them cost the fresh devtools set 0.04 of precision (0.655 -> 0.613, 2026-12-07).
  if (word.length <= SHORT) return word;
  if (stems === undefined) return porter(word);
  let found = stems.get(word);
  if (found === undefined) {
    found = porter(word);
    stems.set(word, found);
  }
  return found;
}
const SHORT = 3;
/** The stems of the catalog being built (`withStems`); none outside a build, so no query is kept. */
let stems: Map<string, string> | undefined;

/**
 * Runs `build` (a catalog's index, synchronous) with a cache of stems: the stemmer is a chain of
 * regular expressions and a catalog's words repeat (without it Porter doubled the 1,000-tool build).
 * The cache is dropped when `build` returns, so no word outlives it.
 */
export function withStems<T>(build: () => T): T {
  if (stems !== undefined) return build();
  stems = new Map();
  try {
    return build();
  } finally {
    stems = undefined;
  }
}

/** The parts of one word, lower-cased and stemmed, without function words and bare numbers. */
export function partsOf(word: string): string[] {
  return wordsIn(word).map(stem);
}

/** The parts of one word, lower-cased, not stemmed (a name word is split before it is stemmed). */
export function wordsIn(word: string): string[] {
  const out: string[] = [];
  for (const piece of word.split(JOINERS)) {
    const split = piece.replace(CASE_CHANGE, "$1 $2").split(" ");
    for (const part of split) {
      const lower = part.toLowerCase();
      if (lower.length < 2 || DIGITS.test(lower) || STOPWORDS.has(lower)) continue;
      out.push(lower);
    }
    // A word written in camel case is also the word whole (`OpenShift` is open, shift and openshift).
    if (split.length > 1 && !DIGITS.test(piece)) out.push(piece.toLowerCase());
  }
  return out;
}

/** The compound term of a word of several parts: lower-cased, every joiner read as `_`. */
export function compoundOf(word: string): string | undefined {
  if (!JOINERS.test(word)) return undefined;
  return COMPOUND + word.toLowerCase().replace(/[_-]+/g, "_");
}

/** An email address or a URL in a query: a value the tool will be given, never a word that says which tool. */
const VALUE = /\S+@\S+\.\S+|[a-z][a-z0-9+.-]*:\/\/\S+/gi;
/**
 * An absolute path (`/projects/app`), a path to a file or a file name (`reports/summary.md`,
 * `login.ts`, `*.env.example`), a channel or a handle (`#support`, `@bob`): values too, never words
 * that say which tool. Two words joined by a slash stay words ("free/busy", "acme/web").
 */
const NAMED_VALUE =
  /(?<!\S)\/\S+|\S*\/\S*\.[A-Za-z]\S*|[\w*-]*[A-Za-z0-9*](?:\.[A-Za-z][A-Za-z0-9]{0,9})+\b|(?<!\w)[#@][\w-]+/g;
/** An identifier or amount with three digits or more (`pi_123`, `5O190127TN364715T`): a value too. */
const NUMBERED = /\d.*\d.*\d/;

/** A query's text without its emails, URLs, paths, file names, channels and handles. */
export function withoutValues(query: string): string {
  return query.replace(VALUE, " ").replace(NAMED_VALUE, " ");
}

/** Whether a word of a query is a numbered identifier or amount (a value, unless it names a tool). */
export function isNumbered(word: string): boolean {
  return NUMBERED.test(word);
}

/** The words of a text, as written (a query's words are also checked as tool names). */
export function wordsOf(text: string): string[] {
  return text.match(WORD) ?? [];
}

/** Every term of a text, in order, repeats kept (term frequency counts them). */
export function termsOf(text: string): string[] {
  const out: string[] = [];
  for (const word of wordsOf(text)) termsOfWord(word, out);
  return out;
}

/** Appends one word's terms: its compound term (when it has joiners) then its parts. */
export function termsOfWord(word: string, out: string[]): void {
  const compound = compoundOf(word);
  if (compound !== undefined) out.push(compound);
  for (const part of partsOf(word)) out.push(part);
}
