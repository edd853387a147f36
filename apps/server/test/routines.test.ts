import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { routineSessionId } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { runCli } from "../src/cli/main.js";
import { NIGHTLY_ID, nightlyRoutine, ROUTINE_UID } from "../src/routines/nightly.js";
import { CLINICS } from "../src/agent/clinics.js";
import { call, HARBOR, hostPerTest, SUNRISE } from "./helpers.js";

const startHost = hostPerTest();

function sink() {
  const s = new PassThrough();
  let text = "";
  s.on("data", (c: Buffer) => {
    text += c.toString("utf8");
  });
  return Object.assign(s, { text: () => text });
}

async function cli(argv: string[]) {
  const stdout = sink();
  const stderr = sink();
  const home = mkdtempSync(join(tmpdir(), "alma-cli-"));
  const code = await runCli(argv, {
    stdin: Readable.from([]),
    stdout,
    stderr,
    env: { ALMA_HOME: home },
    cwd: home,
  });
  return { code, out: stdout.text(), err: stderr.text() };
}

const minutely = {
  goal: "Summarize the last minute for the staff.",
  intent: { tier: "balanced", sensitivity: "confidential" },
  schedule: { cron: "* * * * *", timeZone: "UTC" },
  cap: 0.05,
};

describe("host: routines", () => {
  it("seeds one nightly summary routine per clinic at its back office, once (a restart keeps it)", async () => {
    const t = await startHost();
    const list = await call(t.url, "/v1/admin/routines", { token: t.admin });
    expect(list.status).toBe(200);
    const routines = list.body.routines as { org: string; uid: string; id: string }[];
    expect(routines.map((r) => `${r.org}/${r.uid}/${r.id}`)).toEqual(
      CLINICS.map((c) => `${c.org}/${ROUTINE_UID}/${NIGHTLY_ID}`).sort(),
    );
    const one = routines[0];
    expect(one).toMatchObject({
      schedule: { cron: "0 22 * * *", timeZone: "America/Sao_Paulo" },
      cap: { usd: 0.05, onExceeded: "block" },
      destination: "clinic-staff",
      execution: "job",
      catchUp: false,
    });
    expect(nightlyRoutine(CLINICS[0] as (typeof CLINICS)[number], 0).intent.sensitivity).toBe(
      "confidential",
    );
    expect((await call(t.url, "/v1/admin/routines")).status, "operator only").toBe(401);
    expect((await call(t.url, "/v1/admin/routines", { token: await t.token() })).status).toBe(401);
  });

  it("saves a routine through the admin API (hostile data refused 422), ticks it, lists its run and delivery; resolve refuses what is not the operator's", async () => {
    const t = await startHost();
    const admin = (path: string, opts: { method?: string; body?: unknown } = {}) =>
      call(t.url, path, { token: t.admin, ...opts });
    for (const bad of [
      { ...minutely, schedule: { cron: "61 * * * *", timeZone: "UTC" } },
      { ...minutely, schedule: { cron: "* * * * *", timeZone: "Mars/Olympus" } },
      { ...minutely, goal: "g".repeat(8001) },
      { ...minutely, destination: "attacker" },
      { ...minutely, cap: -1 },
    ]) {
      const res = await admin(`/v1/admin/routines/${SUNRISE}/minutely`, {
        method: "PUT",
        body: bad,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(422);
    }
    expect(
      (await admin("/v1/admin/routines/nowhere/minutely", { method: "PUT", body: minutely }))
        .status,
    ).toBe(404);
    const saved = await admin(`/v1/admin/routines/${HARBOR}/minutely`, {
      method: "PUT",
      body: minutely,
    });
    expect(saved.status).toBe(201);
    expect(saved.body.routine).toMatchObject({
      org: HARBOR,
      uid: ROUTINE_UID,
      id: "minutely",
      destination: "clinic-staff",
      cap: { usd: 0.05, onExceeded: "block" },
    });
    expect(
      (await admin(`/v1/admin/routines/${HARBOR}/minutely`, { method: "PUT", body: minutely }))
        .status,
      "an update keeps it",
    ).toBe(200);
    // The routine's createdAt is now: its first slot is the next minute. Record one of its slots directly as a dead process would leave it.
    const scope = { org: HARBOR, uid: ROUTINE_UID };
    const slot = Math.floor(Date.now() / 60_000) * 60_000 - 3_600_000;
    await t.host.context.routines.scheduler.stores.routineRuns.claim({
      scope,
      routineId: "minutely",
      slot,
      sessionId: routineSessionId("minutely", slot),
      owner: "dead",
      at: slot,
    });
    const tick = await admin("/v1/admin/routines/tick", { method: "POST" });
    expect(tick.status).toBe(200);
    expect(tick.body.tick).toMatchObject({ interrupted: 1, errors: [] });
    const runs = await admin(`/v1/admin/routines/runs?org=${HARBOR}&state=reconciliation_required`);
    expect(
      (runs.body.runs as { routineId: string; slot: number; reason: string }[]).map((r) => [
        r.routineId,
        r.slot,
        r.reason,
      ]),
    ).toEqual([["minutely", slot, "interrupted"]]);
    expect((await admin("/v1/admin/routines/runs?state=paused")).status).toBe(422);
    const resolvePath = `/v1/admin/routines/${HARBOR}/minutely/runs/${slot}/resolve`;
    expect((await admin(resolvePath, { method: "POST", body: { action: "explode" } })).status).toBe(
      422,
    );
    const abandoned = await admin(resolvePath, { method: "POST", body: { action: "abandon" } });
    expect(abandoned.body.run).toMatchObject({ state: "failed", reason: "operator_abandoned" });
    expect(
      (await admin(resolvePath, { method: "POST", body: { action: "abandon" } })).status,
      "a closed run is not the operator's to resolve again",
    ).toBe(409);
    expect(
      (await admin(`/v1/admin/routines/${HARBOR}/minutely`, { method: "DELETE" })).body,
    ).toEqual({ removed: true });
  });

  it("alma routines: lists the routines, ticks, lists runs and the inbox, resolves a run", async () => {
    const t = await startHost();
    const common = ["--url", t.url, "--admin-token", t.admin];
    const list = await cli(["routines", ...common]);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^2 routine\(s\); last tick not yet\n/);
    expect(list.out).toContain(
      `  ${HARBOR}  ${NIGHTLY_ID}  "0 22 * * *" America/Sao_Paulo  cap $0.05 (block)  job\n`,
    );
    const tick = await cli(["routines", "tick", ...common]);
    expect(tick.out).toMatch(
      /^tick: \d+ ran, \d+ missed, 0 submitted, 0 interrupted, 0 held elsewhere, 0 error\(s\)\n$/,
    );
    const scope = { org: SUNRISE, uid: ROUTINE_UID };
    const slot = Date.UTC(2026, 0, 1, 1);
    await t.host.context.routines.scheduler.stores.routineRuns.claim({
      scope,
      routineId: NIGHTLY_ID,
      slot,
      sessionId: routineSessionId(NIGHTLY_ID, slot),
      owner: "dead",
      at: slot,
    });
    await t.host.context.routines.scheduler.stores.routineRuns.reconcileInterrupted({
      claimedBefore: slot + 1,
      at: slot + 2,
    });
    const runs = await cli([
      "routines",
      "runs",
      "--org",
      SUNRISE,
      "--state",
      "reconciliation_required",
      ...common,
    ]);
    expect(runs.out).toBe(
      `1 run(s)\n  ${SUNRISE}  ${NIGHTLY_ID}  2026-01-01T01:00:00.000Z (${slot})  #1  reconciliation_required (interrupted)\n`,
    );
    const resolved = await cli([
      "routines",
      "resolve",
      "--org",
      SUNRISE,
      "--routine",
      NIGHTLY_ID,
      "--slot",
      String(slot),
      "--action",
      "confirm_completed",
      ...common,
    ]);
    expect(resolved.out).toBe(
      `resolved: ${SUNRISE}  ${NIGHTLY_ID}  2026-01-01T01:00:00.000Z (${slot})  #1  completed (operator_completed)\n`,
    );
    expect((await cli(["routines", "inbox", ...common])).out).toMatch(/^\d+ message\(s\)\n/);
    expect(await cli(["routines", "resolve", "--org", SUNRISE, ...common])).toMatchObject({
      code: 1,
      err: expect.stringContaining("needs --org, --routine, --slot and --action"),
    });
    expect((await cli(["routines", "explode", ...common])).code).not.toBe(0);
  });
});
