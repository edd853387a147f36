import { type Scope, sessionPseudonym, trailId, trailKind } from "@alma-harness/core";
import { inMemoryStores, RecordingAuditLog } from "@alma-harness/core/testing";
import { coverMemory, createMemoryErasure, storeRecall } from "@alma-harness/memory";
import { inMemoryMemoryStores } from "@alma-harness/memory/testing";
import { episodeOf, factOf, scanValue } from "@alma-harness/testing";
import { describe, expect, it } from "vitest";

const KEY = "k".repeat(32);
const A: Scope = { org: "clinic", uid: "patient-7" };
const B: Scope = { org: "clinic", uid: "patient-70" };
const PATIENT = "Zebulon-Quackenbush";

function set() {
  const audit = new RecordingAuditLog();
  const core = inMemoryStores({ audit, trailKey: KEY });
  const memory = inMemoryMemoryStores();
  const stores = {
    ...core,
    episodes: memory.episodes,
    profiles: memory.profiles,
    memoryErasure: memory.erasure,
    erasure: coverMemory(core.erasure, memory.erasure),
  };
  const erasure = createMemoryErasure({ stores, trailKey: KEY, now: () => 1_000 });
  return { audit, stores, erasure, recall: storeRecall(memory) };
}

/** A session's memory and its labels and one trail event, as a turn and extraction leave them. */
async function seed(s: ReturnType<typeof set>, scope: Scope, sessionId: string) {
  const source = { sessionId, turnId: "t1", at: 10 };
  await s.stores.episodes.put(
    episodeOf(`ep-${sessionId}`, {
      scope,
      source,
      summary: `${PATIENT} (${scope.uid}-${sessionId}) told us about a penicillin allergy.`,
    }),
  );
  await s.stores.profiles.put(
    factOf(`f-${sessionId}`, {
      scope,
      key: `allergy.${sessionId}`,
      source,
      text: `${PATIENT} (${scope.uid}-${sessionId}): allergic to penicillin.`,
    }),
  );
  await s.stores.labels.put(scope, sessionId, { mrn: `mrn-${scope.uid}-${sessionId}` });
  await s.audit.append({
    trail: "recall",
    scope,
    sessionId: sessionPseudonym(KEY, scope, sessionId),
    turnId: trailId("t1"),
    at: 10,
    source: trailKind("memory"),
    items: 2,
  } as never);
}

const recalled = async (s: ReturnType<typeof set>, scope: Scope) => {
  const r = await s.recall.recall({
    scope,
    sessionId: "any",
    text: "penicillin allergy",
    ceiling: "restricted",
    limits: { episodes: 10, facts: 10 },
    signal: new AbortController().signal,
  });
  return [
    ...r.episodes.map((e) => e.source.sessionId),
    ...r.facts.map((f) => f.source.sessionId),
  ].sort();
};

describe("createMemoryErasure", () => {
  it("erases a session across memory, labels and trails; storeRecall returns nothing of it; one pseudonymous event records it", async () => {
    const s = set();
    await seed(s, A, "s1");
    await seed(s, A, "s2");
    await seed(s, B, "s1");
    expect(await recalled(s, A)).toEqual(["s1", "s1", "s2", "s2"]);
    const outcome = await s.erasure.eraseSession(A, "s1");
    expect(outcome).toEqual({ target: "session", episodes: 1, facts: 1, fencedAdmissions: 0 });
    expect(await recalled(s, A)).toEqual(["s2", "s2"]);
    expect(await recalled(s, B), "another scope whose id shares a prefix keeps its memory").toEqual(
      ["s1", "s1"],
    );
    expect(await s.stores.labels.get(A, "s1")).toBeUndefined();
    const events = (await s.audit.query(A)).items;
    const erased = events.filter((e) => e.trail === "lifecycle");
    expect(erased).toEqual([
      {
        seq: expect.any(Number),
        trail: "lifecycle",
        action: "erasure.completed",
        scope: A,
        sessionId: sessionPseudonym(KEY, A, "s1"),
        turnId: "erasure",
        at: 1_000,
        detail: "session:1:1:0",
      },
    ]);
    expect(
      events.filter((e) => e.trail === "recall").map((e) => e.sessionId),
      "the session's own trail events went with it",
    ).toEqual([sessionPseudonym(KEY, A, "s2")]);
    // No value any store holds (memory's rows, labels, trails) carries the erased session's tag; the kept ones still do.
    expect(scanValue(s.stores, ["patient-7-s1"], "stores")).toEqual([]);
    expect(scanValue(s.stores, ["patient-7-s2"], "stores").length).toBeGreaterThan(0);
    expect(scanValue(s.stores, ["patient-70-s1"], "stores").length).toBeGreaterThan(0);
    expect((await s.stores.episodes.list(A, { sessionId: "s1" })).items).toEqual([]);
    expect((await s.stores.profiles.list(A, { sessionId: "s1" })).items).toEqual([]);
    expect(await s.erasure.eraseSession(A, "s1")).toEqual({
      target: "session",
      episodes: 0,
      facts: 0,
      fencedAdmissions: 0,
    });
  });

  it("erases a scope: every session's memory, labels sealed, trails gone but the one erasure event (its session the kind `scope`)", async () => {
    const s = set();
    await seed(s, A, "s1");
    await seed(s, A, "s2");
    await seed(s, B, "s1");
    expect(await s.erasure.eraseScope(A)).toEqual({
      target: "scope",
      episodes: 2,
      facts: 2,
      fencedAdmissions: 0,
    });
    expect(await recalled(s, A)).toEqual([]);
    expect(await recalled(s, B)).toEqual(["s1", "s1"]);
    expect(
      scanValue(s.stores, [PATIENT], "stores").length,
      "scope B's memory still holds its patient",
    ).toBeGreaterThan(0);
    const events = (await s.audit.query(A)).items;
    expect(events.map((e) => [e.trail, e.sessionId, "detail" in e ? e.detail : undefined])).toEqual(
      [["lifecycle", "scope", "scope:2:2:0"]],
    );
    await expect(s.stores.labels.put(A, "s3", { mrn: "x" })).rejects.toThrow(/erased/);
  });

  it("removeFact: one fact gone, audited with counts only; an unknown fact counts 0", async () => {
    const s = set();
    await seed(s, A, "s1");
    expect(await s.erasure.removeFact(A, "f-s1")).toEqual({
      target: "fact",
      episodes: 0,
      facts: 1,
      fencedAdmissions: 0,
    });
    expect(await s.erasure.removeFact(A, "f-s1")).toEqual({
      target: "fact",
      episodes: 0,
      facts: 0,
      fencedAdmissions: 0,
    });
    expect((await s.stores.profiles.list(A)).items).toEqual([]);
    const details = (await s.audit.query(A, { trail: "lifecycle" })).items.map((e) =>
      "detail" in e ? e.detail : undefined,
    );
    expect(details).toEqual(["fact:0:1:0", "fact:0:0:0"]);
  });

  it("bad input erases nothing; an audit failure leaves the erasure done and rejects, and the retry records it", async () => {
    const s = set();
    await seed(s, A, "s1");
    await expect(s.erasure.eraseSession(A, "has space")).rejects.toThrow();
    await expect(s.erasure.eraseSession({ org: "bad org", uid: "x" }, "s1")).rejects.toThrow();
    expect(await recalled(s, A)).toEqual(["s1", "s1"]);
    s.audit.failAppends(new Error("audit down"));
    await expect(s.erasure.eraseSession(A, "s1")).rejects.toThrow(/audit down/);
    expect(await recalled(s, A), "the erasure stands").toEqual([]);
    s.audit.failAppends(undefined);
    expect((await s.erasure.eraseSession(A, "s1")).episodes).toBe(0);
    expect((await s.audit.query(A, { trail: "lifecycle" })).items).toHaveLength(1);
  });
});
