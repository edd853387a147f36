import { normalizeScope, type ProfileFact, type Scope } from "@alma-harness/core";
import { operatorRoute } from "./admin-api.js";
import type { HostApp } from "./api.js";
import type { HostContext } from "./context.js";
import { HttpError, json } from "./errors.js";
import { answers, Id, params, ScopePart } from "./schemas.js";

/** The most facts one view reads (five pages of 100): a person's profile is small; more is reported as truncated. */
const MAX_FACTS = 500;

function personOf(host: HostContext, p: { org: string; uid: string }): Scope {
  if (!host.desk.clinic(p.org)) throw new HttpError("not_found", "no such tenant");
  return normalizeScope({ org: p.org, uid: p.uid });
}

const Person = { org: ScopePart, uid: ScopePart };

function memoryApi(host: HostContext) {
  return {
    list: operatorRoute(host, {
      method: "get",
      path: "/v1/admin/tenants/{org}/people/{uid}/memory",
      summary: "A person's profile facts with their sources, and the episode count",
      request: { params: params(Person) },
      responses: answers({ 200: "`{org, uid, facts, truncated, episodes}`" }, [401, 404, 422]),
    }),
    forgetFact: operatorRoute(host, {
      method: "delete",
      path: "/v1/admin/tenants/{org}/people/{uid}/memory/facts/{factId}",
      summary: "Forget one fact (one audited erasure event)",
      request: { params: params({ ...Person, factId: Id }) },
      responses: answers({ 200: "`{org, uid, removed}`" }, [401, 404, 422]),
    }),
    erase: operatorRoute(host, {
      method: "delete",
      path: "/v1/admin/tenants/{org}/people/{uid}/memory",
      summary: "Erase the person's memory (episodes and facts), conversations kept",
      request: { params: params(Person) },
      responses: answers({ 200: "`{org, uid, erased, episodes, facts}`" }, [401, 404, 422]),
    }),
  };
}

/**
 * A fact as the operator sees it. Decision: the fact's text is shown (an authenticated operator
 * route; the operator must read what is remembered to decide what to forget), as the transcript
 * route shows messages; its source is trail-like, so it names the session by its pseudonym
 * (`sessionPseudonym`, the value the trails carry, to look the turn up there), never by its id.
 * `current`: the newest fact of its key, the one recall may use.
 */
function operatorFact(host: HostContext, f: ProfileFact, current: boolean) {
  return {
    factId: f.factId,
    key: f.key,
    text: f.text,
    sensitivity: f.sensitivity,
    confidence: f.confidence,
    current,
    source: {
      sessionPseudonym: host.runtime.memory.pseudonymOf(f.scope, f.source.sessionId),
      turnId: f.source.turnId,
      at: f.source.at,
    },
  };
}

async function factsOf(host: HostContext, scope: Scope) {
  const facts: ProfileFact[] = [];
  let cursor: string | undefined;
  do {
    const page = await host.runtime.stores.profiles.list(scope, {
      limit: 100,
      ...(cursor ? { cursor } : {}),
    });
    facts.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && facts.length < MAX_FACTS);
  // The listing is newest first: the first fact of a key is its current one.
  const seen = new Set<string>();
  const out = facts.slice(0, MAX_FACTS).map((f) => {
    const current = !seen.has(f.key);
    seen.add(f.key);
    return operatorFact(host, f, current);
  });
  return { facts: out, truncated: cursor !== undefined };
}

/**
 * A person's memory for the operator: `GET …/people/:uid/memory` lists their profile facts with
 * their sources; `DELETE …/memory/facts/:factId` forgets one fact; `DELETE …/memory` erases the
 * person's memory (episodes and facts), their conversations kept. Each removal is one audited
 * erasure event (`createMemoryErasure`, lifecycle `erasure.completed`, counts only).
 */
export function memoryRoutes(app: HostApp, host: HostContext): void {
  const r = memoryApi(host);
  app.openapi(r.list, async (c) => {
    const scope = personOf(host, c.req.valid("param"));
    const episodes = (await host.runtime.stores.episodes.list(scope, { limit: 100 })).items.length;
    return json(200, { org: scope.org, uid: scope.uid, ...(await factsOf(host, scope)), episodes });
  });
  app.openapi(r.forgetFact, async (c) => {
    const p = c.req.valid("param");
    const scope = personOf(host, p);
    const outcome = await host.runtime.memory.removeFact(scope, p.factId);
    if (outcome.facts === 0) throw new HttpError("not_found", "no such fact for this person");
    return json(200, { org: scope.org, uid: scope.uid, removed: outcome.facts });
  });
  app.openapi(r.erase, async (c) => {
    const scope = personOf(host, c.req.valid("param"));
    const outcome = await host.runtime.memory.eraseMemory(scope);
    return json(200, {
      org: scope.org,
      uid: scope.uid,
      erased: true,
      episodes: outcome.episodes,
      facts: outcome.facts,
    });
  });
}
