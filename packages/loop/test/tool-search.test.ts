import { defineTool, type ToolDefinition, type ToolSpec } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import type { Grant } from "../src/grant.js";
import { grantCatalog } from "../src/search/loads.js";
import { score } from "../src/search/bm25.js";
import { isNumbered, stem, termsOf, withoutValues, wordsOf } from "../src/search/terms.js";
import { isReadName, isWriteName, moodOf } from "../src/search/verbs.js";
import {
  catalogOf,
  findTools,
  MIN_COVERAGE,
  RANKING,
  type Ranking,
  RELATIVE_THRESHOLD,
  type SearchableTool,
} from "../src/search/tool-search.js";

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
    expect(termsOf("The pods of 3 Releases")).toEqual(["pod", stem("release")]);
    expect(termsOf("parseConfig")).toEqual([stem("parse"), "config", "parseconfig"]);
    expect(termsOf("create_invoice")).toEqual(["~create_invoice", stem("create"), stem("invoice")]);
    expect(termsOf("get-current-time")).toEqual(["~get_current_time", "get", "current", "time"]);
  });

  it("a query's values (emails, URLs, identifiers with three digits or more) are not its words; a numbered word that names a tool still does", () => {
    expect(wordsOf(withoutValues("add jane@acme.com, see https://x.io/a?b=1 now"))).toEqual([
      "add",
      "see",
      "now",
    ]);
    expect(
      ["pi_123", "5O190127TN364715T", "sub_12", "2-4pm", "create_invoice"].map(isNumbered),
    ).toEqual([true, true, false, false, false]);
    const numbered = catalogOf([
      t("x__get_v100", "Gets the hundredth thing."),
      t("x__other", "Other things."),
    ]);
    expect(findTools(numbered, () => false, { query: "get_v100" }).loaded).toEqual(["x__get_v100"]);
    expect(findTools(numbered, () => false, { query: "other things pi_100200" }).loaded).toEqual([
      "x__other",
    ]);
  });

  it("plural, -ing and -ed forms meet on one stem (a Porter stemmer); words of three letters stay", () => {
    expect(new Set(["commit", "commits", "committed", "committing"].map(stem)).size).toBe(1);
    expect(new Set(["create", "created", "creates", "creating"].map(stem)).size).toBe(1);
    expect(new Set(["subscribe", "subscribes", "subscribed"].map(stem)).size).toBe(1);
    expect(stem("replies")).toBe(stem("reply"));
    expect(["ios", "pos", "get"].map(stem)).toEqual(["ios", "pos", "get"]);
  });
});

describe("names: exactly the tools named, never ranked, not bounded by limit", () => {
  it("a full name and a unique short name load", () => {
    expect(
      findTools(catalog, nothingLoaded, { names: ["crm__find_patient", "order_test"] }),
    ).toEqual({
      loaded: ["crm__find_patient", "lab__order_test"],
      alreadyAvailable: [],
      ambiguous: {},
      unknown: [],
    });
  });

  it("a short name several granted tools share is ambiguous, with their full names, and loads nothing", () => {
    const found = findTools(catalog, nothingLoaded, { names: ["create_invoice"] });
    expect(found.loaded).toEqual([]);
    expect(found.ambiguous).toEqual({
      create_invoice: ["crm__create_invoice", "billing__create_invoice"],
    });
  });

  it("a name no granted tool has is unknown; a named tool already callable is alreadyAvailable", () => {
    const loaded = new Set(["lab__get_results"]);
    const callable = (n: string) => n === "echo" || loaded.has(n);
    const found = findTools(catalog, callable, {
      names: ["create_pr", "echo", "get_results", "crm__find_patient"],
    });
    expect(found).toEqual({
      loaded: ["crm__find_patient"],
      alreadyAvailable: ["echo", "lab__get_results"],
      ambiguous: {},
      unknown: ["create_pr"],
    });
  });

  it("names are exact before they are case-blind, and a repeated name is reported once", () => {
    expect(findTools(catalog, nothingLoaded, { names: ["BOOK_SLOT", "book_slot"] }).loaded).toEqual(
      ["calendar__book_slot"],
    );
    expect(findTools(catalog, nothingLoaded, { names: ["nope", "nope"] }).unknown).toEqual([
      "nope",
    ]);
  });

  it("limit does not bound names", () => {
    const names = ["find_patient", "order_test", "get_results", "book_slot"];
    expect(findTools(catalog, nothingLoaded, { names, limit: 1 }).loaded).toEqual([
      "crm__find_patient",
      "lab__order_test",
      "lab__get_results",
      "calendar__book_slot",
    ]);
  });
});

describe("query: named tools first, then the other words ranked", () => {
  it("a full name or a unique short name in the query loads that tool, and its other words do not pull near misses", () => {
    expect(
      findTools(catalog, nothingLoaded, { query: "order_test for the blood panel" }).loaded,
    ).toEqual(["lab__order_test"]);
    expect(findTools(catalog, nothingLoaded, { query: "use crm__find_patient" }).loaded).toEqual([
      "crm__find_patient",
    ]);
  });

  it("a query that names one tool and describes another loads both, the named one first", () => {
    expect(
      findTools(catalog, nothingLoaded, {
        query: "find_patient then book an appointment slot in the calendar",
      }).loaded,
    ).toEqual(["crm__find_patient", "calendar__book_slot"]);
  });

  it("an ambiguous short name in a query is reported and its words rank (a server word then decides)", () => {
    const found = findTools(catalog, nothingLoaded, { query: "create_invoice billing system" });
    expect(found.ambiguous).toEqual({
      create_invoice: ["crm__create_invoice", "billing__create_invoice"],
    });
    expect(found.loaded[0]).toBe("billing__create_invoice");
  });

  it("a query that matches nothing well loads nothing", () => {
    expect(
      findTools(catalog, nothingLoaded, { query: "translate this paragraph into French" }).loaded,
    ).toEqual([]);
    expect(findTools(catalog, nothingLoaded, { query: "zzz qqq" }).loaded).toEqual([]);
  });

  it("a query whose opening verb is a tool's name verb is a match, even among unknown words (seven tools: one rare word covers a fifth)", () => {
    expect(findTools(catalog, nothingLoaded, { query: "book a flight to Berlin" }).loaded).toEqual([
      "calendar__book_slot",
    ]);
  });

  it("limit caps the ranked loads, highest score first; it is never a quota", () => {
    const loose = catalogOf(CLINIC, { ...RANKING, relative: 0.5, tie: 0.5 });
    const all = findTools(loose, nothingLoaded, { query: "laboratory test results" }).loaded;
    expect(all).toEqual(["lab__get_results", "lab__order_test"]);
    expect(
      findTools(loose, nothingLoaded, { query: "laboratory test results", limit: 1 }).loaded,
    ).toEqual(["lab__get_results"]);
    expect(findTools(catalog, nothingLoaded, { query: "appointment", limit: 5 }).loaded).toEqual([
      "calendar__book_slot",
    ]);
  });

  it("an already callable tool is never loaded again, yet its score still sets the bar", () => {
    const callable = (n: string) => n === "lab__get_results" || nothingLoaded(n);
    expect(findTools(catalog, callable, { query: "laboratory results" }).loaded).toEqual([]);
    expect(findTools(catalog, nothingLoaded, { query: "laboratory results" }).loaded).toEqual([
      "lab__get_results",
    ]);
  });
});

/** One gate at a time: every other rule of the ranking switched off. */
const ONLY: Ranking = {
  ...RANKING,
  relative: 0,
  floor: 0,
  minCoverage: 0,
  coverageRatio: 0,
  tie: 0,
  gain: 0,
  writePenalty: 0,
  readPenalty: 0,
  strayTerms: Number.POSITIVE_INFINITY,
};

describe("the relative threshold, at its boundary", () => {
  // alpha and beta each appear in two tools (one idf); A and B have one length, so B scores exactly half of A.
  const tools = [
    t("x__one", "alpha beta gamma delta"),
    t("x__two", "alpha gamma delta epsilon"),
    t("x__six", "beta zeta theta iota kappa lambda omicron sigma"),
    t("x__ten", "rho tau upsilon phi"),
  ];
  const exact = catalogOf(tools, { ...ONLY, relative: 0.5 });

  it("a tool at exactly the share of the best score loads; one just below it does not", () => {
    const scores = score(exact.index, termsOf("alpha beta"));
    const [a = 0, b, c] = [0, 1, 2].map((i) => scores.find((s) => s.index === i)?.score ?? 0);
    expect(b).toBe(a * 0.5);
    expect(c).toBeGreaterThan(0);
    expect(c).toBeLessThan(a * 0.5);
    expect(findTools(exact, () => false, { query: "alpha beta" }).loaded).toEqual([
      "x__one",
      "x__two",
    ]);
  });

  it("the shipped ranking's relative bar holds on the clinic catalog: nothing loaded is below it", () => {
    for (const query of [
      "laboratory test",
      "patient invoice",
      "appointment calendar",
      "find patient record",
      "results",
    ]) {
      const found = findTools(catalog, nothingLoaded, { query, limit: 50 });
      const scored = score(catalog.index, termsOf(query));
      const best = Math.max(...scored.map((s) => s.score));
      for (const name of found.loaded) {
        const s = scored.find((x) => CLINIC[x.index]?.name === name);
        expect(s?.score ?? 0, `${query}: ${name}`).toBeGreaterThanOrEqual(
          best * RELATIVE_THRESHOLD * (1 - RANKING.writePenalty),
        );
      }
    }
  });
});

describe("the absolute floor: a search that matches nothing well loads nothing", () => {
  const tools = [
    t("x__one", "alpha beta gamma"),
    t("x__two", "delta epsilon zeta"),
    t("x__three", "eta theta iota"),
  ];
  const at = (floor: number) => catalogOf(tools, { ...ONLY, floor });
  const best = () => score(at(0).index, termsOf("alpha")).find((s) => s.index === 0)?.score ?? 0;

  it("the best match at exactly the floor loads; just above the floor's bar it does not, though it is the best", () => {
    const unit = at(1).floorScore;
    expect(findTools(at(best() / unit), () => false, { query: "alpha" }).loaded).toEqual([
      "x__one",
    ]);
    expect(findTools(at(best() / unit + 1e-9), () => false, { query: "alpha" }).loaded).toEqual([]);
  });

  it("on the shipped ranking, description-only stray words load nothing", () => {
    expect(
      findTools(catalog, nothingLoaded, { query: "reschedule my dentist appointment on Friday" })
        .loaded,
    ).toEqual([]);
    expect(findTools(catalog, nothingLoaded, { query: "zzz qqq" }).loaded).toEqual([]);
  });
});

describe("term coverage: one stray word of a many-word query does not load", () => {
  const tools = [t("x__full", "alpha beta gamma"), t("x__stray", "alpha"), t("x__none", "delta")];

  it("a tool below the coverage ratio of the best is left out; at the ratio it loads", () => {
    const scored = score(catalogOf(tools, ONLY).index, termsOf("alpha beta gamma"));
    const [full, stray] = [0, 1].map((i) => scored.find((s) => s.index === i)?.coverage ?? 0) as [
      number,
      number,
    ];
    expect(
      findTools(catalogOf(tools, { ...ONLY, coverageRatio: stray / full }), () => false, {
        query: "alpha beta gamma",
      }).loaded,
    ).toEqual(["x__full", "x__stray"]);
    expect(
      findTools(catalogOf(tools, { ...ONLY, coverageRatio: stray / full + 1e-9 }), () => false, {
        query: "alpha beta gamma",
      }).loaded,
    ).toEqual(["x__full"]);
  });

  it("a stray: in a query of strayTerms terms, one description-only match never loads; one term fewer, it may; a name match is never a stray", () => {
    const strays = catalogOf(tools, { ...ONLY, strayTerms: 3 });
    expect(RANKING.strayTerms).toBe(3);
    expect(findTools(strays, () => false, { query: "delta omega" }).loaded).toEqual(["x__none"]);
    expect(findTools(strays, () => false, { query: "delta omega psi" }).loaded).toEqual([]);
    expect(
      findTools(
        catalogOf([...tools, t("x__delta", "nothing else")], { ...ONLY, strayTerms: 3 }),
        () => false,
        { query: "delta omega psi" },
      ).loaded,
    ).toEqual(["x__delta"]);
  });

  it("the best match must cover enough of the query: one weak word among unknown ones loads nothing", () => {
    const top = (query: string) =>
      Math.max(...score(catalog.index, termsOf(query)).map((s) => s.coverage));
    expect(top("laboratory flight")).toBeGreaterThanOrEqual(MIN_COVERAGE);
    expect(
      findTools(catalog, nothingLoaded, { query: "laboratory flight" }).loaded.length,
    ).toBeGreaterThan(0);
    expect(top("laboratory flight hotel")).toBeLessThan(MIN_COVERAGE);
    expect(findTools(catalog, nothingLoaded, { query: "laboratory flight hotel" }).loaded).toEqual(
      [],
    );
  });
});

describe("ties and new words: a crowd sharing the best's words stays out, a second need loads", () => {
  const tools = [
    t("shop__create_product", "Creates a product."),
    t("shop__create_price", "Creates a price."),
    t("shop__create_customer", "Creates a customer."),
    t("shop__list_widgets", "Lists widgets."),
    t("shop__list_widget_parts", "Lists widgets and their parts."),
  ];
  const ranked = catalogOf(tools, { ...ONLY, tie: 0.8, gain: 0.3 });

  it("below a tie, a tool loads only for words the chosen ones did not match", () => {
    expect(
      findTools(ranked, () => false, { query: "create the product and its price" }).loaded,
    ).toEqual(["shop__create_product", "shop__create_price"]);
    expect(findTools(ranked, () => false, { query: "create a customer" }).loaded).toEqual([
      "shop__create_customer",
    ]);
  });

  it("on a query the best covers whole, a near tie whose name matches none of its words stays out; on a query covered in part it loads", () => {
    const pair = catalogOf(
      [t("x__alpha_beta", "Gamma."), t("x__other", "Alpha beta, gamma and delta.")],
      { ...ONLY, gain: 1 },
    );
    expect(findTools(pair, () => false, { query: "alpha beta" }).loaded).toEqual(["x__alpha_beta"]);
    expect(findTools(pair, () => false, { query: "alpha beta zeta" }).loaded).toEqual([
      "x__alpha_beta",
      "x__other",
    ]);
  });

  it("a near tie loads beside the best; with tie and gain off, every tool over the bar loads", () => {
    expect(findTools(ranked, () => false, { query: "list widgets" }).loaded).toEqual([
      "shop__list_widgets",
      "shop__list_widget_parts",
    ]);
    expect(
      findTools(catalogOf(tools, ONLY), () => false, { query: "create a customer" }).loaded,
    ).toEqual(["shop__create_customer", "shop__create_product", "shop__create_price"]);
  });
});

describe("the catalog's own words: servers, split names, word beginnings, verbs", () => {
  const tools = [
    t("stripe__retrieve_balance", "Retrieves the balance from Stripe."),
    t("paypal__get_balance", "Gets the PayPal balance."),
    t("clock__get_time", "Gets the time."),
    t("calendar__list_events", "Lists events at a time."),
    t("chat__usergroups_list", "Lists all groups."),
    t("chat__users_search", "Searches people."),
    t("docs__search_documentation", "Searches the manual."),
    t("ship__get_tracking", "Gets tracking for a shipment."),
    t("ship__update_tracking", "Updates tracking for a shipment."),
  ];
  const own = catalogOf(tools);

  it("a query that says a server's own word ranks only that server's tools; a word other servers use does not narrow", () => {
    expect(own.index.servers.has(stem("stripe"))).toBe(true);
    expect(findTools(own, () => false, { query: "stripe balance" }).loaded).toEqual([
      "stripe__retrieve_balance",
    ]);
    expect(own.index.servers.has("clock")).toBe(true);
    expect(own.index.servers.has(stem("time"))).toBe(false);
  });

  it("a server is named by its word whole, even when the query spells it in parts (GitHub)", () => {
    const hub = catalogOf([
      t("github__list_tags", "Lists tags in a GitHub repository."),
      t("git__git_tag", "Lists local tags."),
      t("git__git_log", "Shows the log."),
    ]);
    expect(hub.index.servers.has("github")).toBe(true);
    const names = (words?: string[]) =>
      score(hub.index, termsOf("GitHub tags"), 1, words).map((s) => hub.tools[s.index]?.name);
    // A word in camel case is also the word whole, so the query's own terms name the server.
    expect(termsOf("GitHub")).toEqual(["git", "hub", "github"]);
    expect(names()).toEqual(["github__list_tags"]);
    expect(names(["github", "git", "hub", "tags"])).toEqual(["github__list_tags"]);
    expect(findTools(hub, () => false, { query: "GitHub tags" }).loaded).toEqual([
      "github__list_tags",
    ]);
  });

  it("a name word the catalog's words spell in two matches both; a known word that begins a name word matches it", () => {
    expect(own.index.docs[4]?.terms.has("user")).toBe(true);
    expect(own.index.docs[4]?.terms.has("group")).toBe(true);
    expect(findTools(own, () => false, { query: "docs" }).loaded).toEqual([
      "docs__search_documentation",
    ]);
  });

  it("a query with no verb that changes something puts reading tools first among equal matches", () => {
    expect(findTools(own, () => false, { query: "shipment tracking" }).loaded[0]).toBe(
      "ship__get_tracking",
    );
    const strict = catalogOf(tools, {
      ...ONLY,
      tie: 0.9,
      gain: 1,
      writePenalty: RANKING.writePenalty,
    });
    expect(findTools(strict, () => false, { query: "shipment tracking" }).loaded).toEqual([
      "ship__get_tracking",
    ]);
    expect(
      findTools(strict, () => false, { query: "update the shipment tracking" }).loaded,
    ).toEqual(["ship__update_tracking"]);
    expect(
      findTools(strict, () => false, { query: "unassign the shipment tracking" }).loaded,
    ).toEqual(["ship__get_tracking", "ship__update_tracking"]);
  });
});

describe("names that say more of the query, shared names, word forms", () => {
  it("a near tie whose name says less of the query than the best's stays out; one whose name says more leads", () => {
    const git = catalogOf([
      t("git__git_diff_staged", "Shows staged changes."),
      t("git__git_diff_unstaged", "Shows changes not yet staged."),
    ]);
    expect(findTools(git, () => false, { query: "git diff staged" }).loaded).toEqual([
      "git__git_diff_staged",
    ]);
    const jira = catalogOf([
      t(
        "jira__get_transitions",
        "Gets the transitions of an issue: each transition moves the issue to a status, transition by transition.",
      ),
      t("jira__transition_issue", "Moves an issue to a status."),
    ]);
    expect(findTools(jira, () => false, { query: "transition issue status" }).loaded).toEqual([
      "jira__transition_issue",
    ]);
    // Without the rule both are near ties and the higher score loads first.
    expect(findTools(jira, () => false, { query: "transition status" }).loaded).toEqual([
      "jira__get_transitions",
      "jira__transition_issue",
    ]);
  });

  it("when the best match is callable already, a near tie whose name says less still loads", () => {
    const plans = catalogOf([
      t("pay__create_subscription_plan", "Creates a plan for a subscription."),
      t("pay__create_subscription", "Creates a subscription to a plan."),
    ]);
    expect(findTools(plans, () => false, { query: "create subscription plan" }).loaded).toEqual([
      "pay__create_subscription_plan",
    ]);
    expect(
      findTools(plans, (n) => n === "pay__create_subscription_plan", {
        query: "create subscription plan",
      }).loaded,
    ).toEqual(["pay__create_subscription"]);
  });

  it("a shared short name in a query loads the sharers its other words match; with no such word, every sharer stays", () => {
    // OpenShift is a common word here (four tools of five say it), so it weighs little against the shared name.
    const shared = catalogOf([
      t("hub__projects_list", "Lists projects of a user."),
      t("kube__projects_list", "Lists the OpenShift projects in the cluster."),
      ...["get", "delete", "create"].map((verb) =>
        t(`kube__resources_${verb}`, `Works on an OpenShift or Kubernetes resource (${verb}).`),
      ),
    ]);
    expect(findTools(shared, () => false, { query: "projects_list openshift" }).loaded).toEqual([
      "kube__projects_list",
    ]);
    expect(findTools(shared, () => false, { query: "projects_list" }).loaded).toEqual([
      "hub__projects_list",
      "kube__projects_list",
    ]);
    expect(findTools(shared, () => false, { query: "projects_list zebra" }).loaded).toEqual([
      "hub__projects_list",
      "kube__projects_list",
    ]);
  });

  it("a camel-case word is also the word whole", () => {
    expect(termsOf("OpenShift")).toEqual(["open", "shift", "openshift"]);
  });

  it("a word naming the state of a thing makes an opening verb a noun: the query asks neither to write nor only to read", () => {
    expect(moodOf(termsOf("refund status"))).toBe("any");
    expect(moodOf(termsOf("refund the payment"))).toBe("write");
  });

  it("a question asks to read, more firmly than a query without a verb", () => {
    expect([
      moodOf(termsOf("which subscriptions are on the price"), true),
      moodOf(termsOf("subscriptions on the price")),
    ]).toEqual(["ask", "read"]);
    const subs = [
      t("pay__list_subscriptions", "Lists subscriptions."),
      t("pay__update_subscription", "Updates the price of a subscription."),
      ...["list_customers", "create_coupon", "get_balance"].map((name) =>
        t(`pay__${name}`, `Does ${name}.`),
      ),
    ];
    // The update matches the price too: as a plain query it leads; as a question the reading tool does.
    const ranked = catalogOf(subs, {
      ...ONLY,
      tie: 0.97,
      gain: 1,
      writePenalty: 0.3,
      readPenalty: 0.5,
    });
    expect(
      findTools(ranked, () => false, { query: "which subscriptions are on the Pro price" }).loaded,
    ).toEqual(["pay__list_subscriptions"]);
    expect(
      findTools(ranked, () => false, { query: "subscriptions on the Pro price" }).loaded,
    ).toEqual(["pay__update_subscription"]);
  });

  it('a noun that opens a query as an imperative, or an opening verb with "new", asks to create; the same noun later, or "new" alone, does not', () => {
    expect(moodOf(termsOf("comment on the page"))).toBe("create");
    expect(moodOf(termsOf("email the agenda to the team"))).toBe("create");
    expect(moodOf(termsOf("start a new sprint"))).toBe("create");
    expect([
      moodOf(termsOf("react with a thumbs up")),
      moodOf(termsOf("reply to the email")),
    ]).toEqual(["create", "create"]);
    expect(moodOf(termsOf("start the sprint"))).toBe("write");
    expect(moodOf(termsOf("find the email about the agenda"))).toBe("read");
    expect(moodOf(termsOf("release health and new issues"))).toBe("any");
    const mail = catalogOf(
      [
        t("mail__send_email", "Sends an email."),
        t("mail__read_email", "Reads an email."),
        t("mail__delete_email", "Deletes an email."),
      ],
      { ...ONLY, tie: 0.9, gain: 1, readPenalty: RANKING.readPenalty },
    );
    expect(findTools(mail, () => false, { query: "email the agenda" }).loaded).toEqual([
      "mail__send_email",
    ]);
    expect(findTools(mail, () => false, { query: "agenda email" }).loaded).toEqual([
      "mail__send_email",
      "mail__read_email",
      "mail__delete_email",
    ]);
  });
});

describe("verbs: which names change something, and what a query asks", () => {
  it("a name with a verb that changes and none that only reads writes; a reading verb makes it read whatever noun follows", () => {
    expect([
      isWriteName("git_commit"),
      isWriteName("list_commits"),
      isWriteName("get_transitions"),
      isWriteName("usergroups_users_update"),
    ]).toEqual([true, false, false, true]);
    expect([
      isReadName("list_commits"),
      isReadName("git_commit"),
      isReadName("pods_log"),
      isReadName("create_refund"),
      isReadName("git_diff_staged"),
    ]).toEqual([true, false, false, false, true]);
  });

  it("a query that opens with a changing verb asks to write; one with no such verb reads; a changing word later in it says neither", () => {
    expect(moodOf(termsOf("refund the payment intent"))).toBe("write");
    expect(moodOf(termsOf("re-run the failed workflow"))).toBe("write");
    expect(moodOf(termsOf("unassign the ticket"))).toBe("write");
    expect(moodOf(termsOf("show the history of my local checkout"))).toBe("any");
    expect(moodOf(termsOf("dependabot alerts"))).toBe("read");
  });

  it("a query that opens with a changing verb scores tools that only read lower; without the penalty they tie", () => {
    const tools = [
      t("pay__list_refunds", "Refunds of a payment."),
      t("pay__create_refund", "Refunds of a payment."),
    ];
    const strict = (readPenalty: number) =>
      catalogOf(tools, { ...ONLY, tie: 0.9, gain: 1, readPenalty });
    expect(findTools(strict(0.2), () => false, { query: "refund a payment" }).loaded).toEqual([
      "pay__create_refund",
    ]);
    expect(findTools(strict(0), () => false, { query: "refund a payment" }).loaded).toEqual([
      "pay__list_refunds",
      "pay__create_refund",
    ]);
  });
});

describe("only the turn's granted tools are consulted", () => {
  const granted = catalogOf(
    CLINIC.filter((x) => x.name !== "billing__create_invoice" && x.name !== "lab__order_test"),
  );

  it("a name outside the grant matches nothing and is never listed", () => {
    const found = findTools(granted, nothingLoaded, {
      names: ["lab__order_test", "order_test", "create_invoice"],
    });
    expect(found).toEqual({
      loaded: ["crm__create_invoice"],
      alreadyAvailable: [],
      ambiguous: {},
      unknown: ["lab__order_test", "order_test"],
    });
    expect(
      JSON.stringify(
        findTools(granted, nothingLoaded, { query: "billing system invoice for an account" }),
      ),
    ).not.toContain("billing__");
  });

  it("a tool outside the grant never weighs a word: the grant's idf differs from the registry's", () => {
    expect(granted.index.df.get("invoic")).toBe(1);
    expect(catalog.index.df.get("invoic")).toBe(2);
  });
});

describe("the index is built once per grant, not per search or per turn", () => {
  const tools = [
    defineTool({
      name: "lab__get_results",
      description: "Gets results.",
      input: { type: "object" },
      deferred: true,
      handler: () => ({}),
    }),
  ];
  // grantCatalog reads only the grant: its tools and the engine's specs (the cache's key holder).
  const env = (specs: ReadonlyMap<string, ToolSpec>, tools: readonly ToolDefinition[]): Grant => ({
    tools,
    specs,
    byName: new Map(tools.map((t) => [t.name, t])),
    registered: new Map(),
  });

  it("the same grant, or another turn's grant with the same names on the same engine, reuses the catalog; another engine builds its own", () => {
    const engine = new Map<string, ToolSpec>();
    const first = grantCatalog(env(engine, tools));
    expect(grantCatalog(env(engine, tools))).toBe(first);
    expect(grantCatalog(env(engine, [...tools]))).toBe(first);
    expect(grantCatalog(env(new Map(), [...tools]))).not.toBe(first);
  });
});
