/**
 * The words of tool names, descriptions and search queries, reduced to terms the ranking compares.
 * A word is a run of letters and digits joined by `_` or `-` (so a tool name stays one word); its
 * parts are split at the joiners and at lower-to-upper case changes, lower-cased and stemmed. A
 * word of several parts also yields one compound term, so a query that spells a short name
 * (`create_invoice`) matches that name as a whole, and more strongly than its parts alone.
 */

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

/** A light suffix stemmer: plural, -ing and -ed forms, and a final e, meet on one stem. */
export function stem(word: string): string {
  let w = word;
  if (w.length <= 3) return w;
  if (w.endsWith("ies") && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (w.endsWith("sses")) w = w.slice(0, -2);
  else if (w.endsWith("s") && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1);
  let stripped = false;
  if (w.endsWith("ing") && w.length > 5) {
    w = w.slice(0, -3);
    stripped = true;
  } else if (w.endsWith("ed") && w.length > 4) {
    w = w.slice(0, -2);
    stripped = true;
  }
  // committed -> commit, running -> run: a doubled final consonant left by the suffix is one.
  if (stripped && /([b-df-hj-km-np-rtv-z])\1$/.test(w) && !/(ll|ss|zz)$/.test(w))
    w = w.slice(0, -1);
  if (w.endsWith("e") && w.length > 3) w = w.slice(0, -1);
  return w;
}

/** The parts of one word, lower-cased and stemmed, without function words and bare numbers. */
export function partsOf(word: string): string[] {
  const out: string[] = [];
  for (const piece of word.split(JOINERS)) {
    const split = piece.replace(CASE_CHANGE, "$1 $2").split(" ");
    for (const part of split) {
      const lower = part.toLowerCase();
      if (lower.length < 2 || DIGITS.test(lower) || STOPWORDS.has(lower)) continue;
      out.push(stem(lower));
    }
    // A word written in camel case is also the word whole (`OpenShift` is open, shift and openshift).
    if (split.length > 1 && !DIGITS.test(piece)) out.push(stem(piece.toLowerCase()));
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
/** An identifier or amount with three digits or more (`pi_123`, `5O190127TN364715T`): a value too. */
const NUMBERED = /\d.*\d.*\d/;

/** A query's text without its emails and URLs. */
export function withoutValues(query: string): string {
  return query.replace(VALUE, " ");
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
