import { partsOf, stem } from "./terms.js";

/**
 * Verbs that change something (English, stemmed as the index stems them). A tool whose short name
 * carries one is a write tool; a query that says none asks to read, so among tools that match it
 * alike the ones that read come first (`track a shipment`: get, not create or update, tracking).
 * A language rule, not a list of queries: it names what the words mean, never which tool wins.
 */
const WRITE_WORDS = (
  "create update delete add remove send cancel edit move set write patch post put apply install uninstall merge fork push " +
  "trigger assign transition accept pay finalize mark modify draft reply copy exec execute run scale commit checkout reset " +
  "respond rename replace insert upload approve stage close open reopen resolve archive restore refund capture submit " +
  "start stop make build generate invite join leave share enable disable block unblock link unlink tell notify react subscribe unsubscribe"
).split(" ");
const WRITE_VERBS = new Set(WRITE_WORDS.map(stem));
/** The same verbs undone or done again (`unstage`, `rewrite`, `reopen`), stemmed whole: a query's word. */
const WRITE_FORMS = new Set([
  ...WRITE_VERBS,
  ...WRITE_WORDS.flatMap((v) => [`un${v}`, `re${v}`]).map(stem),
]);

/** Verbs that only read (stemmed): a name that carries one reads, whatever noun follows (`list_commits`, `get_transitions`). */
const READ_VERBS = new Set(
  "get list search find show retrieve read view fetch describe query lookup diff compare"
    .split(" ")
    .map(stem),
);

/** Whether a tool's short name says it changes something: a verb that changes, and none that only reads. */
export function isWriteName(shortName: string): boolean {
  const parts = partsOf(shortName);
  return parts.some((part) => WRITE_VERBS.has(part)) && !parts.some((part) => READ_VERBS.has(part));
}

/** Whether a tool's short name only reads: a verb that only reads (whatever noun follows: `list_refunds`). */
export function isReadName(shortName: string): boolean {
  return partsOf(shortName).some((part) => READ_VERBS.has(part));
}

/** Words that ask for something new without a verb ("a new sprint"). */
const WRITE_SIGNALS = new Set(["new"]);

/** Whether any of a query's terms is a verb that changes something (or asks for something new); `un-` and `re-` change too. */
export function asksToWrite(terms: readonly string[]): boolean {
  return terms.some((term) => WRITE_FORMS.has(term) || WRITE_SIGNALS.has(term));
}

/**
 * Nouns that, opening a query, are verbs that make that thing ("email the agenda": send an email;
 * "comment on the page": add a comment). Said later in a query they stay nouns.
 */
const OPENING_VERBS = new Set(
  "email message comment text ping tag label schedule book react reply respond"
    .split(" ")
    .map(stem),
);

/** Verbs that make something new (stemmed): a name that carries one creates. */
const CREATE_VERBS = new Set(
  "create add send post make new insert upload book invite open start".split(" ").map(stem),
);

/** Nouns that name the state or record of a thing (stemmed): a query that says one asks about that thing. */
const STATE_NOUNS = new Set("status state details history progress".split(" ").map(stem));

/**
 * What a query asks, by its mood: `create` when it asks for something new (a noun opening it as a
 * verb, or an opening verb and the word "new"), `write` when it opens with a verb that changes,
 * `read` when it says no such verb, `ask` when it is a question, `any` when it says neither
 * firmly (a changing word later in it, or a word naming the state of a thing).
 */
export type QueryMood = "create" | "write" | "read" | "ask" | "any";

/** Words that open a question ("which subscriptions…", "how many errors…"): a question asks to read. */
const QUESTION_WORDS = new Set(
  "which what whats how who whom whose when where is are was were do does did".split(" "),
);

/** Whether a query, as written, opens with a question word. */
export function isQuestion(query: string): boolean {
  const first = /[A-Za-z]+/.exec(query)?.[0]?.toLowerCase();
  return first !== undefined && QUESTION_WORDS.has(first);
}

const isWriteVerb = (term: string) => WRITE_FORMS.has(term);

/** Whether a tool's short name makes something new (`create_sprint`, `send_email`, `add_comment`). */
export function isCreateName(shortName: string): boolean {
  return partsOf(shortName).some((part) => CREATE_VERBS.has(part));
}

/**
 * A query's mood. A query that opens with a verb that changes something (`refund the payment`,
 * `re-run the workflow`) asks to write; one that says no such verb anywhere asks to read. A verb
 * later in the query may be a noun (`my local checkout`), so only the opening verb says `write`.
 * A word naming the state of a thing makes the opening verb a noun too ("refund status"). A noun
 * that opens the query as a verb asks to create, and so does an opening verb with the word "new"
 * ("start a new sprint"; "new issues" alone only reads). A question asks to read, more firmly
 * than a query without a verb (`ask`).
 */
export function moodOf(terms: readonly string[], question = false): QueryMood {
  if (terms.some((t) => STATE_NOUNS.has(t))) return "any";
  if (question) return "ask";
  const first = terms.find((t) => !t.startsWith("~"));
  if (first !== undefined && OPENING_VERBS.has(first)) return "create";
  if (first !== undefined && (isWriteVerb(first) || (first === "re" && terms.some(isWriteVerb))))
    return terms.some((t) => WRITE_SIGNALS.has(t)) ? "create" : "write";
  return asksToWrite(terms) ? "any" : "read";
}
