import { partsOf, stem } from "./terms.js";

/**
 * Verbs that change something (English, stemmed as the index stems them). A tool whose short name
 * carries one is a write tool; a query that says none asks to read, so among tools that match it
 * alike the ones that read come first (`track a shipment`: get, not create or update, tracking).
 * A language rule, not a list of queries: it names what the words mean, never which tool wins.
 */
const WRITE_VERBS = new Set(
  (
    "create update delete add remove send cancel edit move set write patch post put apply install uninstall merge fork push " +
    "trigger assign transition accept pay finalize mark modify draft reply copy exec execute run scale commit checkout reset " +
    "respond rename replace insert upload approve stage close open reopen resolve archive restore refund capture submit " +
    "start stop make build generate invite join leave share enable disable block unblock link unlink tell notify"
  )
    .split(" ")
    .map(stem),
);

/** Whether a tool's short name says it changes something. */
export function isWriteName(shortName: string): boolean {
  return partsOf(shortName).some((part) => WRITE_VERBS.has(part));
}

/** Words that ask for something new without a verb ("a new sprint"). */
const WRITE_SIGNALS = new Set(["new"]);

/** Whether any of a query's terms is a verb that changes something (or asks for something new); `un-` and `re-` change too. */
export function asksToWrite(terms: readonly string[]): boolean {
  return terms.some((term) => WRITE_VERBS.has(term) || WRITE_SIGNALS.has(term) || (/^(un|re)/.test(term) && WRITE_VERBS.has(term.slice(2))));
}
