import { describe, expect, it } from "vitest";
import { ANA, call, HARBOR, hostPerTest, SUNRISE } from "./helpers.js";

const startHost = hostPerTest();

const scope = { org: SUNRISE, uid: ANA };
const fact = (factId: string, key: string, text: string, at: number) => ({
  scope,
  factId,
  key,
  text,
  source: { sessionId: "+15550004004", turnId: "t1", at },
  sensitivity: "confidential" as const,
  confidence: 0.8,
});

describe("operator memory routes", () => {
  it("list a person's facts with their sources by pseudonym (current marked), forget one (404 when absent), erase the person's memory; operator token only", async () => {
    const t = await startHost();
    const rt = t.host.context.runtime;
    await rt.stores.profiles.put(fact("f-old", "allergy.penicillin", "Allergic to penicillin.", 1));
    await rt.stores.profiles.put(
      fact("f-new", "allergy.penicillin", "Not allergic after testing.", 2),
    );
    await rt.stores.episodes.put({
      scope,
      episodeId: "ep-1",
      source: { sessionId: "+15550004004", turnId: "t1", at: 1 },
      sensitivity: "internal",
      summary: "Allergy test.",
    });
    const path = `/v1/admin/tenants/${SUNRISE}/people/${ANA}/memory`;
    expect((await call(t.url, path)).status).toBe(401);
    expect(
      (await call(t.url, path, { token: await t.token() })).status,
      "a tenant token is not the operator's",
    ).toBe(401);
    const listed = await call(t.url, path, { token: t.admin });
    expect(listed.status).toBe(200);
    const pseudonym =
      listed.body.facts &&
      (listed.body.facts as { source: { sessionPseudonym: string } }[])[0]?.source.sessionPseudonym;
    expect(pseudonym).toMatch(/^sp_[0-9a-f]{32}$/);
    expect(JSON.stringify(listed.body)).not.toContain("+15550004004");
    expect(listed.body).toEqual({
      org: SUNRISE,
      uid: ANA,
      episodes: 1,
      truncated: false,
      facts: [
        {
          factId: "f-new",
          key: "allergy.penicillin",
          text: "Not allergic after testing.",
          sensitivity: "confidential",
          confidence: 0.8,
          current: true,
          source: { sessionPseudonym: pseudonym, turnId: "t1", at: 2 },
        },
        {
          factId: "f-old",
          key: "allergy.penicillin",
          text: "Allergic to penicillin.",
          sensitivity: "confidential",
          confidence: 0.8,
          current: false,
          source: { sessionPseudonym: pseudonym, turnId: "t1", at: 1 },
        },
      ],
    });
    // Another person's view is theirs only; an unknown tenant is 404.
    expect(
      (await call(t.url, `/v1/admin/tenants/${HARBOR}/people/${ANA}/memory`, { token: t.admin }))
        .body.facts,
    ).toEqual([]);
    expect(
      (await call(t.url, `/v1/admin/tenants/nope/people/${ANA}/memory`, { token: t.admin })).status,
    ).toBe(404);
    expect(
      (await call(t.url, `${path}/facts/f-new`, { token: t.admin, method: "DELETE" })).body,
    ).toEqual({ org: SUNRISE, uid: ANA, removed: 1 });
    expect(
      (await call(t.url, `${path}/facts/f-new`, { token: t.admin, method: "DELETE" })).status,
    ).toBe(404);
    expect(
      (await call(t.url, `${path}/facts/bad%20id`, { token: t.admin, method: "DELETE" })).status,
    ).toBe(422);
    expect((await call(t.url, path, { token: t.admin, method: "DELETE" })).body).toEqual({
      org: SUNRISE,
      uid: ANA,
      erased: true,
      episodes: 1,
      facts: 1,
    });
    expect((await call(t.url, path, { token: t.admin })).body.facts).toEqual([]);
    const events = (await rt.stores.audit.query(scope, { trail: "lifecycle" })).items.flatMap(
      (e) =>
        e.trail === "lifecycle" && e.action === "erasure.completed"
          ? [[e.sessionId, e.detail]]
          : [],
    );
    expect(events).toEqual([
      ["scope", "fact:0:1:0"],
      ["scope", "fact:0:0:0"],
      ["scope", "memory:1:1:0"],
    ]);
  });
});
