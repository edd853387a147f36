import { normalizeScope, type ProfileFact, type Scope, validateId } from "@alma-harness/core";
import type { HostContext } from "./context.js";
import { HttpError, json } from "./errors.js";
import type { RouteRequest } from "./router.js";

type On = (method: string, path: string, handler: (r: RouteRequest) => Promise<Response>) => void;

/** The most facts one view reads (five pages of 100): a person's profile is small; more is reported as truncated. */
const MAX_FACTS = 500;

function personOf(host: HostContext, r: RouteRequest): Scope {
  const org = r.params.org;
  if (org === undefined || !host.desk.clinic(org))
    throw new HttpError("not_found", "no such tenant");
  return normalizeScope({ org, uid: r.params.uid });
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
export function memoryRoutes(on: On, host: HostContext): void {
  on("GET", "/v1/admin/tenants/:org/people/:uid/memory", async (r) => {
    const scope = personOf(host, r);
    const episodes = (await host.runtime.stores.episodes.list(scope, { limit: 100 })).items.length;
    return json(200, { org: scope.org, uid: scope.uid, ...(await factsOf(host, scope)), episodes });
  });
  on("DELETE", "/v1/admin/tenants/:org/people/:uid/memory/facts/:factId", async (r) => {
    const scope = personOf(host, r);
    const outcome = await host.runtime.memory.removeFact(
      scope,
      validateId("factId", r.params.factId),
    );
    if (outcome.facts === 0) throw new HttpError("not_found", "no such fact for this person");
    return json(200, { org: scope.org, uid: scope.uid, removed: outcome.facts });
  });
  on("DELETE", "/v1/admin/tenants/:org/people/:uid/memory", async (r) => {
    const scope = personOf(host, r);
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
