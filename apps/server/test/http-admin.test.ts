import { sessionPseudonym, trailHash } from "@alma-harness/core";
import { CANARIES, canariesIn } from "@alma-harness/testing";
import { jwtVerify } from "jose";
import { afterEach, describe, expect, it } from "vitest";
import {
  ANA,
  call,
  HARBOR,
  pendingAsk,
  SECRETS,
  startHost,
  SUNRISE,
  type TestHost,
  turn,
} from "./helpers.js";

let t: TestHost;
afterEach(async () => {
  await t?.close();
});

const admin = (path: string, opts: { method?: string; body?: unknown } = {}) =>
  call(t.url, path, { token: t.admin, ...opts });

async function bookedTurn(): Promise<string> {
  const token = await t.token();
  const pending = turn(t, token, "s-book", "k-book", "Please book an appointment");
  const ask = await pendingAsk(t);
  const listed = await admin("/v1/admin/asks");
  expect(listed.body.asks).toEqual([
    expect.objectContaining({
      id: ask.id,
      org: SUNRISE,
      uid: ANA,
      sessionId: "s-book",
      tool: "book_appointment",
      input: { slotId: expect.any(String) },
    }),
  ]);
  expect((await admin(`/v1/admin/asks?org=${HARBOR}`)).body.asks).toEqual([]);
  expect((await admin(`/v1/admin/asks/${ask.id}/approve`, { method: "POST" })).status).toBe(200);
  const parked = await pending;
  expect(parked.body.status).toBe("awaiting_approval");
  await t.host.idle();
  return parked.body.rootKey as string;
}

describe("operator routes", () => {
  it("lists tenants with the people the host knows, and sessions per tenant", async () => {
    t = await startHost();
    await turn(
      t,
      await t.token(SUNRISE, "p-9999"),
      "walk-in",
      "k1",
      "When are you open on Monday?",
    );
    const tenants = await admin("/v1/admin/tenants");
    expect(tenants.body.tenants).toEqual([
      {
        org: SUNRISE,
        name: "Sunrise Family Clinic",
        people: [
          { uid: "p-1001", name: "Ana Souza" },
          { uid: "p-1002", name: "Bruno Lima" },
          { uid: "p-9999", name: null },
        ],
      },
      {
        org: HARBOR,
        name: "Harbor Dental Care",
        people: [
          { uid: "p-2001", name: "Carla Mendes" },
          { uid: "p-2002", name: "Diego Rocha" },
        ],
      },
    ]);
    const sessions = await admin(`/v1/admin/tenants/${SUNRISE}/sessions`);
    expect(sessions.body.sessions).toEqual([
      expect.objectContaining({ uid: "p-9999", sessionId: "walk-in", revision: 4 }),
    ]);
    expect((await admin(`/v1/admin/tenants/${HARBOR}/sessions`)).body.sessions).toEqual([]);
    expect((await admin("/v1/admin/tenants/nope/sessions")).status).toBe(404);
  });

  it("reads a session's transcript and a turn's trails as a timeline", async () => {
    t = await startHost();
    const rootKey = await bookedTurn();
    const session = await admin(`/v1/admin/tenants/${SUNRISE}/sessions/${ANA}/s-book`);
    expect(session.body.turns).toEqual([
      {
        rootKey,
        input: "Please book an appointment",
        reply: expect.stringMatching(/booked/),
        tools: ["find_free_slots", "book_appointment", "send_message"],
      },
    ]);

    const trails = await admin(`/v1/admin/turns/${rootKey}`);
    expect(trails.status).toBe(200);
    expect(trails.body).toMatchObject({
      rootKey,
      org: SUNRISE,
      uid: ANA,
      sessionId: "s-book",
      outcome: { status: "completed", terminalReason: "terminal_tool" },
      uncertain: null,
    });
    const events = trails.body.events as {
      trail: string;
      action?: string;
      decision?: string;
      by?: string;
      sensitivity?: string;
      contextVersion?: number;
    }[];
    expect(
      events.filter((e) => e.trail === "routing").every((e) => e.sensitivity === "confidential"),
    ).toBe(true);
    expect(events.filter((e) => e.action === "model.request").map((e) => e.contextVersion)).toEqual(
      [1, 1, 1],
    );
    expect(events.filter((e) => e.trail === "cost")).toHaveLength(3);
    expect(events).toContainEqual(
      expect.objectContaining({ trail: "policy", action: "permission.requested", decision: "ask" }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({
        trail: "policy",
        action: "permission.resolved",
        decision: "allow",
        by: "operator",
      }),
    );
    expect(events.at(-1)).toMatchObject({
      trail: "lifecycle",
      action: "turn.completed",
      detail: "terminal_tool",
    });
    expect((await admin(`/v1/admin/turns/${rootKey}?org=${HARBOR}`)).status).toBe(404);
  });

  it("logs a record read on the access trail", async () => {
    t = await startHost();
    const done = await turn(t, await t.token(), "s1", "k1", "What is on my record?");
    const trails = await admin(`/v1/admin/turns/${done.body.rootKey}?org=${SUNRISE}&uid=${ANA}`);
    // A patient record's id is personal data: the trail keeps its keyed hash (the host's trail key), never the id.
    const resource = trailHash(
      SECRETS.trailKey as string,
      { org: SUNRISE, uid: ANA },
      "patients/p-1001",
    );
    expect(trails.body.events).toContainEqual(
      expect.objectContaining({
        trail: "access",
        tool: "read_patient_record",
        resource,
        action: "read",
      }),
    );
    for (const raw of ["patients/p-1001", "patient:p-1001"])
      expect(JSON.stringify(trails.body.events)).not.toContain(raw);
  });

  it("reads a session's trails by its real session id, though the trails store only its pseudonym", async () => {
    t = await startHost();
    const first = await turn(
      t,
      await t.token(),
      "s-phone-5551234",
      "k1",
      "When are you open on Monday?",
    );
    await turn(t, await t.token(), "s-phone-5551234", "k2", "And on Tuesday?");
    await turn(t, await t.token(), "s-other", "k1", "When are you open on Monday?");
    const trails = await admin(
      `/v1/admin/tenants/${SUNRISE}/sessions/${ANA}/s-phone-5551234/trails`,
    );
    expect(trails.status).toBe(200);
    const events = trails.body.events as { turnId: string; sessionId: string; action?: string }[];
    const pseudonym = sessionPseudonym(
      SECRETS.trailKey as string,
      { org: SUNRISE, uid: ANA },
      "s-phone-5551234",
    );
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.sessionId === pseudonym)).toBe(true);
    expect(events.filter((e) => e.action === "turn.started")).toHaveLength(2);
    expect(events.some((e) => e.turnId === first.body.rootKey)).toBe(true);
    expect(JSON.stringify(events)).not.toContain("5551234");
    // The turn's timeline names the real session (from the turn's root record), never from the trail.
    expect((await admin(`/v1/admin/turns/${first.body.rootKey}`)).body.sessionId).toBe(
      "s-phone-5551234",
    );
    expect(
      (await admin(`/v1/admin/tenants/${SUNRISE}/sessions/${ANA}/nobody/trails`)).body.events,
    ).toEqual([]);
  });

  it("erases everything of one person at a clinic (their scope), and nothing of anyone else", async () => {
    t = await startHost();
    await turn(t, await t.token(), "s-phone-5551234", "k1", "When are you open on Monday?");
    await turn(t, await t.token(), "s-two", "k1", "And on Tuesday?");
    const other = await t.token(SUNRISE, "p-1002");
    await turn(t, other, "s-phone-5551234", "k1", "When are you open on Monday?");
    const erased = await admin(`/v1/admin/tenants/${SUNRISE}/people/${ANA}`, { method: "DELETE" });
    expect(erased).toMatchObject({
      status: 200,
      body: { org: SUNRISE, uid: ANA, erased: true, fencedAdmissions: 0 },
    });
    for (const id of ["s-phone-5551234", "s-two"]) {
      const view = await admin(`/v1/admin/tenants/${SUNRISE}/sessions/${ANA}/${id}`);
      expect(view.body).toMatchObject({ erased: true, messages: [] });
      expect(
        (await admin(`/v1/admin/tenants/${SUNRISE}/sessions/${ANA}/${id}/trails`)).body.events,
      ).toEqual([]);
    }
    const kept = await admin(`/v1/admin/tenants/${SUNRISE}/sessions/p-1002/s-phone-5551234`);
    expect(kept.body).toMatchObject({ erased: false });
    expect((kept.body.messages as unknown[]).length).toBeGreaterThan(0);
    expect(
      (await admin(`/v1/admin/tenants/nowhere/people/${ANA}`, { method: "DELETE" })).status,
    ).toBe(404);
    expect(
      (
        await call(t.url, `/v1/admin/tenants/${SUNRISE}/people/${ANA}`, {
          method: "DELETE",
          token: await t.token(),
        })
      ).status,
    ).toBe(401);
  });

  it("no canary the person sent (a name, an API key, a search, a phone number as the session id) is on the trails the operator reads", async () => {
    t = await startHost();
    const text = `I am ${CANARIES.patientName}, key ${CANARIES.apiKey}. ${CANARIES.searchQuery}. What is on my record?`;
    const done = await turn(
      t,
      await t.token(),
      encodeURIComponent(CANARIES.phoneSessionId),
      "k1",
      text,
    );
    expect(done.status).toBe(200);
    const bySession = await admin(
      `/v1/admin/tenants/${SUNRISE}/sessions/${ANA}/${encodeURIComponent(CANARIES.phoneSessionId)}/trails`,
    );
    const byTurn = await admin(`/v1/admin/turns/${done.body.rootKey}`);
    expect((bySession.body.events as unknown[]).length).toBeGreaterThan(0);
    expect(canariesIn(JSON.stringify(bySession.body.events))).toEqual([]);
    expect(canariesIn(JSON.stringify(byTurn.body.events))).toEqual([]);
    // The transcript, which is session content, does hold them: the scan is not vacuous.
    const transcript = await admin(
      `/v1/admin/tenants/${SUNRISE}/sessions/${ANA}/${encodeURIComponent(CANARIES.phoneSessionId)}`,
    );
    expect(canariesIn(JSON.stringify(transcript.body.messages))).not.toEqual([]);
  });

  it("reports spend per clinic per day against the caps", async () => {
    t = await startHost({ caps: { perTurnUsd: 0.5, perClinicDayUsd: 3 } });
    const done = await turn(t, await t.token(), "s1", "k1", "When are you open on Monday?");
    const spend = await admin("/v1/admin/spend?days=7");
    expect(spend.body.caps).toEqual({ perTurnUsd: 0.5, perClinicDayUsd: 3, action: "block" });
    const [sunrise, harbor] = spend.body.tenants as {
      org: string;
      capUsdMicros: number;
      days: { day: string; usd: string }[];
    }[];
    expect(sunrise?.org).toBe(SUNRISE);
    expect(sunrise?.capUsdMicros).toBe(3_000_000);
    expect(sunrise?.days).toHaveLength(7);
    expect(sunrise?.days.at(-1)?.usd).toBe(done.body.costUsd);
    expect(harbor?.days.every((d) => d.usd === "0.000000")).toBe(true);
  });

  it("answers 404 for an ask that is not pending; an expired ask is the kernel's denial and frees the session", async () => {
    t = await startHost({ approvalTtlMs: 1_000 });
    expect((await admin("/v1/admin/asks/ask_nope/approve", { method: "POST" })).status).toBe(404);
    const token = await t.token();
    const parked = await turn(t, token, "s1", "k1", "Please book an appointment");
    const ask = await pendingAsk(t);
    expect((await admin("/v1/admin/asks")).body.asks).toEqual([
      expect.objectContaining({
        id: ask.id,
        expiresAt: expect.any(Number),
        ageMs: expect.any(Number),
      }),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    // Too late for the operator: refused, typed, and nothing runs.
    const late = await admin(`/v1/admin/asks/${ask.id}/approve`, { method: "POST" });
    expect([late.status, late.body.error]).toEqual([
      409,
      { code: "ask_refused", message: expect.stringMatching(/expired/) },
    ]);
    await t.host.maintain();
    const done = await call(t.url, `/v1/turns/${parked.body.rootKey as string}`, { token });
    expect(done.body.text).toMatch(/The booking was not made: permission denied/);
    expect(done.body.text).not.toMatch(/operator/);
    expect((await admin("/v1/admin/asks")).body.asks).toEqual([]);
    expect(t.host.context.desk.appointmentsOf(SUNRISE, ANA)).toEqual([]);
    const next = await turn(t, token, "s1", "k2", "When are you open on Monday?");
    expect(next.status).toBe(200);
  });

  it("mints tenant tokens for the console (201), for served tenants only", async () => {
    t = await startHost();
    const minted = await admin("/v1/admin/tokens", {
      method: "POST",
      body: { org: HARBOR, uid: "p-2002", ttlSeconds: 600 },
    });
    expect(minted.status).toBe(201);
    const { payload } = await jwtVerify(minted.body.token as string, SECRETS.jwtSecret);
    expect(payload).toMatchObject({ org: HARBOR, uid: "p-2002" });
    expect(
      (await admin("/v1/admin/tokens", { method: "POST", body: { org: "elsewhere", uid: "x" } }))
        .status,
    ).toBe(404);
    expect(
      (await admin("/v1/admin/tokens", { method: "POST", body: { org: HARBOR, uid: "bad uid" } }))
        .status,
    ).toBe(422);
    expect(
      (
        await admin("/v1/admin/tokens", {
          method: "POST",
          body: { org: HARBOR, uid: "x", ttlSeconds: 5 },
        })
      ).status,
    ).toBe(422);
  });

  it("shows what the terminal tool sent, per clinic", async () => {
    t = await startHost();
    await bookedTurn();
    const outbox = await admin(`/v1/admin/tenants/${SUNRISE}/outbox`);
    expect(outbox.body.messages).toEqual([
      expect.objectContaining({
        org: SUNRISE,
        patientId: ANA,
        text: expect.stringMatching(/^Confirmed/),
      }),
    ]);
  });
});

describe("GET /v1/admin/late-usage", () => {
  it("lists the late usage of cut calls per person beside the uncertain turns; admin only; an unknown tenant is 404", async () => {
    t = await startHost();
    const done = await turn(t, await t.token(), "s-late", "k-late", "When are you open on Monday?");
    const stores = t.host.context.runtime.stores;
    const inbox = stores.usageInbox;
    if (!inbox) throw new Error("the host's store set has a usage inbox");
    const observation = {
      scope: { org: SUNRISE, uid: ANA },
      sessionId: "s-late",
      rootKey: done.body.rootKey as string,
      turnId: done.body.rootKey as string,
      operationId: "op-late-1",
      kind: "main" as const,
      clientId: "demo",
      model: "demo-model",
      attribution: "known" as const,
      usage: { inputTokens: 120, outputTokens: 30 },
      source: "stream_after_deadline" as const,
      observedAt: Date.UTC(2026, 0, 1),
    };
    const spendBefore = await stores.spend.tenantDays(SUNRISE);
    await inbox.record(observation);
    const listed = await admin("/v1/admin/late-usage");
    expect(listed.status).toBe(200);
    const { scope: _scope, ...rest } = observation;
    expect(listed.body).toEqual({
      available: true,
      truncated: false,
      observations: [{ org: SUNRISE, uid: ANA, ...rest }],
    });
    expect((await admin(`/v1/admin/late-usage?org=${HARBOR}`)).body.observations).toEqual([]);
    expect((await admin(`/v1/admin/late-usage?org=${SUNRISE}`)).body.observations).toHaveLength(1);
    expect((await admin("/v1/admin/late-usage?org=nope")).status).toBe(404);
    expect((await call(t.url, "/v1/admin/late-usage", { token: await t.token() })).status).toBe(
      401,
    );
    expect((await call(t.url, "/v1/admin/late-usage")).status).toBe(401);
    // Evidence only: listing or recording it moves no spend.
    expect(await stores.spend.tenantDays(SUNRISE)).toEqual(spendBefore);
  });
});
