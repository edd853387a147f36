import { describe, expect, it } from "vitest";
import { score } from "../src/search/bm25.js";
import { stem, termsOf } from "../src/search/terms.js";
import { catalogOf, findTools, MIN_COVERAGE, RELATIVE_THRESHOLD, type SearchableTool } from "../src/search/tool-search.js";

/** A searchable tool: the short name is the part after the last `__`, as core computes it. */
function t(name: string, description: string, deferred = true): SearchableTool {
  const at = name.lastIndexOf("__");
  return { name, shortName: at >= 0 ? name.slice(at + 2) : name, description, deferred };
}

const CLINIC = [
  t("echo", "Echoes its text.", false),
  t("crm__find_patient", "Finds a patient record by name or date of birth."),
  t("crm__create_invoice", "Creates an invoice for a patient visit."),
  t("billing__create_invoice", "Creates an invoice in the billing system for an account."),
  t("lab__order_test", "Orders a laboratory test for a patient."),
  t("lab__get_results", "Gets laboratory results for an ordered test."),
  t("calendar__book_slot", "Books an appointment slot in the clinic calendar."),
];
const catalog = catalogOf(CLINIC);
const nothingLoaded = (name: string) => !(CLINIC.find((x) => x.name === name)?.deferred ?? false);

describe("terms: what the ranking compares", () => {
  it("splits names at joiners and case changes, stems, drops function words and bare numbers", () => {
    expect(termsOf("The pods of 3 Releases")).toEqual(["pod", "releas"]);
    expect(termsOf("parseConfig")).toEqual(["pars", "config"]);
    expect(termsOf("create_invoice")).toEqual(["~create_invoice", "creat", "invoic"]);
    expect(termsOf("get-current-time")).toEqual(["~get_current_time", "get", "current", "tim"]);
  });

  it("plural, -ing and -ed forms meet on one stem", () => {
    expect(new Set(["commit", "commits", "committed", "committing"].map(stem))).toEqual(new Set(["commit"]));
    expect(new Set(["create", "created", "creates", "creating"].map(stem))).toEqual(new Set(["creat"]));
    expect(stem("replies")).toBe(stem("reply"));
    expect(stem("status")).toBe("status");
  });
});

describe("names: exactly the tools named, never ranked, not bounded by limit", () => {
  it("a full name and a unique short name load", () => {
    expect(findTools(catalog, nothingLoaded, { names: ["crm__find_patient", "order_test"] })).toEqual({
      loaded: ["crm__find_patient", "lab__order_test"],
      alreadyAvailable: [],
      ambiguous: {},
      unknown: [],
    });
  });

  it("a short name several granted tools share is ambiguous, with their full names, and loads nothing", () => {
    const found = findTools(catalog, nothingLoaded, { names: ["create_invoice"] });
    expect(found.loaded).toEqual([]);
    expect(found.ambiguous).toEqual({ create_invoice: ["crm__create_invoice", "billing__create_invoice"] });
  });

  it("a name no granted tool has is unknown; a named tool already callable is alreadyAvailable", () => {
    const loaded = new Set(["lab__get_results"]);
    const callable = (n: string) => n === "echo" || loaded.has(n);
    const found = findTools(catalog, callable, { names: ["create_pr", "echo", "get_results", "crm__find_patient"] });
    expect(found).toEqual({ loaded: ["crm__find_patient"], alreadyAvailable: ["echo", "lab__get_results"], ambiguous: {}, unknown: ["create_pr"] });
  });

  it("names are exact before they are case-blind, and a repeated name is reported once", () => {
    expect(findTools(catalog, nothingLoaded, { names: ["BOOK_SLOT", "book_slot"] }).loaded).toEqual(["calendar__book_slot"]);
    expect(findTools(catalog, nothingLoaded, { names: ["nope", "nope"] }).unknown).toEqual(["nope"]);
  });

  it("limit does not bound names", () => {
    const names = ["find_patient", "order_test", "get_results", "book_slot"];
    expect(findTools(catalog, nothingLoaded, { names, limit: 1 }).loaded).toEqual(["crm__find_patient", "lab__order_test", "lab__get_results", "calendar__book_slot"]);
  });
});

describe("query: named tools first, then the other words ranked", () => {
  it("a full name or a unique short name in the query loads that tool, and its other words do not pull near misses", () => {
    expect(findTools(catalog, nothingLoaded, { query: "order_test for the blood panel" }).loaded).toEqual(["lab__order_test"]);
    expect(findTools(catalog, nothingLoaded, { query: "use crm__find_patient" }).loaded).toEqual(["crm__find_patient"]);
  });

  it("a query that names one tool and describes another loads both, the named one first", () => {
    expect(findTools(catalog, nothingLoaded, { query: "find_patient then book an appointment slot in the calendar" }).loaded).toEqual(["crm__find_patient", "calendar__book_slot"]);
  });

  it("an ambiguous short name in a query is reported and its words rank (a server word then decides)", () => {
    const found = findTools(catalog, nothingLoaded, { query: "create_invoice billing system" });
    expect(found.ambiguous).toEqual({ create_invoice: ["crm__create_invoice", "billing__create_invoice"] });
    expect(found.loaded[0]).toBe("billing__create_invoice");
  });

  it("a query that matches nothing well loads nothing", () => {
    expect(findTools(catalog, nothingLoaded, { query: "book a flight to Berlin" }).loaded).toEqual([]);
    expect(findTools(catalog, nothingLoaded, { query: "zzz qqq" }).loaded).toEqual([]);
  });

  it("limit caps the ranked loads, highest score first; it is never a quota", () => {
    const all = findTools(catalog, nothingLoaded, { query: "laboratory test results" }).loaded;
    expect(all).toEqual(["lab__get_results", "lab__order_test"]);
    expect(findTools(catalog, nothingLoaded, { query: "laboratory test results", limit: 1 }).loaded).toEqual(["lab__get_results"]);
    expect(findTools(catalog, nothingLoaded, { query: "appointment", limit: 5 }).loaded).toEqual(["calendar__book_slot"]);
  });

  it("an already callable tool is never loaded again, yet its score still sets the bar", () => {
    const callable = (n: string) => n === "lab__get_results" || nothingLoaded(n);
    expect(findTools(catalog, callable, { query: "laboratory results" }).loaded).toEqual([]);
    expect(findTools(catalog, nothingLoaded, { query: "laboratory results" }).loaded).toEqual(["lab__get_results"]);
  });
});

describe("the half-best-score threshold, at its boundary", () => {
  // alpha and beta each appear in two tools (one idf); A and B have one length, so B scores exactly half of A.
  const exact = catalogOf([
    t("x__one", "alpha beta gamma delta"),
    t("x__two", "alpha gamma delta epsilon"),
    t("x__six", "beta zeta theta iota kappa lambda omicron sigma"),
    t("x__ten", "rho tau upsilon phi"),
  ]);

  it("a tool at exactly half the best score loads; one just below it does not", () => {
    const scores = score(exact.index, termsOf("alpha beta"));
    const [a = 0, b, c] = [0, 1, 2].map((i) => scores.find((s) => s.index === i)?.score ?? 0);
    expect(b).toBe(a * RELATIVE_THRESHOLD);
    expect(c).toBeGreaterThan(0);
    expect(c).toBeLessThan(a * RELATIVE_THRESHOLD);
    expect(findTools(exact, () => false, { query: "alpha beta" }).loaded).toEqual(["x__one", "x__two"]);
  });

  it("on the benchmark-sized catalog every loaded tool is at half the best or more, and every candidate left out (with room) is below it", () => {
    for (const query of ["laboratory test", "patient invoice", "appointment calendar", "find patient record", "results"]) {
      const found = findTools(catalog, nothingLoaded, { query, limit: 50 });
      const scored = score(catalog.index, termsOf(query));
      const best = Math.max(...scored.map((s) => s.score));
      for (const s of scored) {
        const name = CLINIC[s.index]?.name as string;
        if (!CLINIC[s.index]?.deferred) continue;
        expect(found.loaded.includes(name), `${query}: ${name}`).toBe(s.score >= best * RELATIVE_THRESHOLD);
      }
    }
  });

  it("the best match must cover enough of the query: one weak word among unknown ones loads nothing", () => {
    const top = (query: string) => Math.max(...score(catalog.index, termsOf(query)).map((s) => s.coverage));
    expect(top("laboratory flight")).toBeGreaterThanOrEqual(MIN_COVERAGE);
    expect(findTools(catalog, nothingLoaded, { query: "laboratory flight" }).loaded.length).toBeGreaterThan(0);
    expect(top("laboratory flight hotel")).toBeLessThan(MIN_COVERAGE);
    expect(findTools(catalog, nothingLoaded, { query: "laboratory flight hotel" }).loaded).toEqual([]);
  });
});

describe("only the turn's granted tools are consulted", () => {
  const granted = catalogOf(CLINIC.filter((x) => x.name !== "billing__create_invoice" && x.name !== "lab__order_test"));

  it("a name outside the grant matches nothing and is never listed", () => {
    const found = findTools(granted, nothingLoaded, { names: ["lab__order_test", "order_test", "create_invoice"] });
    expect(found).toEqual({ loaded: ["crm__create_invoice"], alreadyAvailable: [], ambiguous: {}, unknown: ["lab__order_test", "order_test"] });
    expect(JSON.stringify(findTools(granted, nothingLoaded, { query: "billing system invoice for an account" }))).not.toContain("billing__");
  });

  it("a tool outside the grant never weighs a word: the grant's idf differs from the registry's", () => {
    expect(granted.index.df.get("invoic")).toBe(1);
    expect(catalog.index.df.get("invoic")).toBe(2);
  });
});
