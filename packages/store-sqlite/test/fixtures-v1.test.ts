import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type ExecutionClaim,
  ErasedError,
  type ExecutionRecord,
  FenceError,
  type Scope,
  SessionLabelConflictError,
  SessionLabelErasedError,
  SettlementConflictError,
  type SettlementInput,
  type SettlementRecord,
} from "@alma-harness/core";
import { claimOf, settlementOf, userMsg } from "@alma-harness/testing";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSqliteStores, MAIN_MIGRATIONS, ROOT_MIGRATIONS, type SqliteStores } from "../src/index.js";

/**
 * Records written by the schema and code as released at commit f53caac (main schema version 1,
 * root version 1, record version 1), read by this build after its migrations ran on open. See
 * fixtures/v1/README.md for how the files and `reads.json` (what the old stores returned) were made.
 */
const FIXTURES = fileURLToPath(new URL("./fixtures/v1/", import.meta.url));
const READS = JSON.parse(readFileSync(join(FIXTURES, "reads.json"), "utf8")) as Record<string, unknown> & { readonly roots: Readonly<Record<string, string>> };
const ROOTS = READS.roots;

const T0 = Date.UTC(2026, 0, 15, 9, 0, 0);
const NOW = T0 + 60_000;
const LATER = T0 + 400 * 86_400_000;
const DAY = "2026-01-15";
const SCOPE_A: Scope = { org: "clinic-a", uid: "u1" };
const SCOPE_B: Scope = { org: "clinic-b", uid: "u7" };
const SEALED: Scope = { org: "clinic-c", uid: "u9" };

/** The reads of the fixture's generator, by the same names (see the README). */
function reads(s: SqliteStores): Record<string, () => Promise<unknown>> {
  const out: Record<string, () => Promise<unknown>> = {
    "sessions.load A/s1": () => s.sessions.load(SCOPE_A, "s1"),
    "sessions.load A/s3 (erased)": () => s.sessions.load(SCOPE_A, "s3"),
    "sessions.load B/s1": () => s.sessions.load(SCOPE_B, "s1"),
    "sessions.list A": () => s.sessions.list(SCOPE_A),
    "sessions.list B": () => s.sessions.list(SCOPE_B),
    "sessions.findEvents A/s1": () => s.sessions.findEvents(SCOPE_A, "s1", ["evt-1"]),
    "admissions.holder A/s1": () => s.admissions.holder(SCOPE_A, "s1"),
    "journal.list A": () => s.journal.list(SCOPE_A),
    "journal.list B": () => s.journal.list(SCOPE_B),
    "settlements.list A": () => s.settlements.list(SCOPE_A),
    "settlements.list A/s1": () => s.settlements.list(SCOPE_A, { sessionId: "s1" }),
    "settlements.list A turn": () => s.settlements.list(SCOPE_A, { turnId: ROOTS.toolTurn }),
    "settlements.list B": () => s.settlements.list(SCOPE_B),
    "settlements.pending A billing": () => s.settlements.pending(SCOPE_A, "billing"),
    "settlements.pending B billing": () => s.settlements.pending(SCOPE_B, "billing"),
    "spend.peek A/s1": () => s.spend.peek(SCOPE_A, "s1", DAY),
    "spend.peek A/s3": () => s.spend.peek(SCOPE_A, "s3", DAY),
    "spend.peek B/s1": () => s.spend.peek(SCOPE_B, "s1", DAY),
    "spend.tenantDays clinic-a": () => s.spend.tenantDays("clinic-a"),
    "spend.tenantDays clinic-b": () => s.spend.tenantDays("clinic-b"),
    "labels.get A/s1": () => s.labels.get(SCOPE_A, "s1"),
    "labels.get A/s3 (erased)": () => s.labels.get(SCOPE_A, "s3"),
    "labels.get B/s1": () => s.labels.get(SCOPE_B, "s1"),
    "audit.query A": () => s.audit.query(SCOPE_A, { limit: 500 }),
    "audit.query B": () => s.audit.query(SCOPE_B, { limit: 500 }),
    "audit.query A turn": () => s.audit.query(SCOPE_A, { turnId: ROOTS.toolTurn, limit: 500 }),
    "audit.query A cost": () => s.audit.query(SCOPE_A, { trail: "cost" }),
    "audit.query A page": () => s.audit.query(SCOPE_A, { limit: 10 }),
  };
  for (let n = 1; n <= 6; n++) out[`admissions.get adm_fx000${n}`] = () => s.admissions.get(n === 4 ? SCOPE_B : SCOPE_A, `adm_fx000${n}`);
  for (const [name, root] of Object.entries(ROOTS)) {
    const scope = name === "otherTenant" ? SCOPE_B : SCOPE_A;
    out[`rootResults.get ${name}`] = () => s.rootResults.get(scope, root, NOW);
    out[`rootResults.get ${name} later`] = () => s.rootResults.get(scope, root, LATER);
    out[`results.get ${name} (a root id)`] = () => s.results.get(scope, root, NOW);
    for (const step of [1, 2]) out[`results.get ${name} step ${step}`] = () => s.results.get(scope, `${root}:step:${step}`, NOW);
    out[`results.get ${name} step 1 later`] = () => s.results.get(scope, `${root}:step:1`, LATER);
    for (const call of [1, 2]) {
      out[`journal.get ${name} main ${call}`] = () => s.journal.get(scope, `${root}:main:${call}`);
      out[`settlements.get ${name} main ${call}`] = () => s.settlements.get(scope, `${root}:main:${call}:settlement`);
    }
  }
  return out;
}

/** As the generator wrote it: JSON, with an absent record as `null`. */
const asRecorded = (value: unknown): unknown => JSON.parse(JSON.stringify(value ?? null));
const recorded = <T>(name: string): T => {
  if (!(name in READS)) throw new Error(`reads.json has no "${name}"`);
  return READS[name] as T;
};

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A copy of the fixture's two files in a fresh directory (the fixture itself is never opened). */
function copyFixture(): string {
  const dir = mkdtempSync(join(tmpdir(), "alma-sqlite-v1-"));
  dirs.push(dir);
  for (const file of ["alma.db", "alma.root-results.db"]) copyFileSync(join(FIXTURES, file), join(dir, file));
  return join(dir, "alma.db");
}

const open = (path: string) => createSqliteStores({ path, synchronous: "normal" });

/** Every row of every table of both files (but the version tables), in a stable order. */
function rowsOf(path: string): Record<string, string[]> {
  const raw = new Database(path, { readonly: true });
  try {
    raw.prepare("ATTACH DATABASE ? AS root").run(path.replace(/\.db$/, ".root-results.db"));
    const out: Record<string, string[]> = {};
    for (const schema of ["main", "root"]) {
      const tables = raw.prepare(`SELECT name FROM ${schema}.sqlite_master WHERE type = 'table' AND name NOT IN ('schema_version', 'sqlite_sequence') ORDER BY name`).all() as { name: string }[];
      for (const { name } of tables) {
        out[`${schema}.${name}`] = (raw.prepare(`SELECT * FROM ${schema}.${name}`).all() as unknown[]).map((r) => JSON.stringify(r)).sort();
      }
    }
    return out;
  } finally {
    raw.close();
  }
}

function versionsOf(path: string): { main: unknown[]; root: unknown[] } {
  const raw = new Database(path, { readonly: true });
  try {
    raw.prepare("ATTACH DATABASE ? AS root").run(path.replace(/\.db$/, ".root-results.db"));
    const q = (schema: string) => raw.prepare(`SELECT version, name FROM ${schema}.schema_version ORDER BY version`).all();
    return { main: q("main"), root: q("root") };
  } finally {
    raw.close();
  }
}

describe("sqlite: the v1 fixture (commit f53caac) before this build opens it", () => {
  it("is at main schema version 1 and root version 1, has no reservations table and a row in every table", () => {
    const path = copyFixture();
    expect(versionsOf(path)).toEqual({ main: [{ version: 1, name: "stores" }], root: [{ version: 1, name: "root results" }] });
    const rows = rowsOf(path);
    expect(Object.keys(rows)).not.toContain("main.spend_reservations");
    for (const [table, list] of Object.entries(rows)) expect(list.length, table).toBeGreaterThan(0);
    expect(Object.keys(rows)).toHaveLength(13);
  });
});

describe("sqlite: this build reads the v1 fixture after migrating it", () => {
  let path: string;
  let before: Record<string, string[]>;
  let stores: SqliteStores;
  beforeAll(() => {
    path = copyFixture();
    before = rowsOf(path);
    stores = open(path);
  });
  afterAll(() => stores?.close());

  it("applies migration 2 (spend reservations) once on open and leaves every v1 row as it was", () => {
    expect(stores.schema).toEqual({ main: 2, root: 1 });
    expect(versionsOf(path)).toEqual({
      main: MAIN_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
      root: ROOT_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
    });
    expect(MAIN_MIGRATIONS.map((m) => m.version)).toEqual([1, 2]);
    const after = rowsOf(path);
    expect(after["main.spend_reservations"]).toEqual([]);
    const { "main.spend_reservations": _, ...old } = after;
    expect(old).toEqual(before);
  });

  it("returns what the old stores returned, read by read", async () => {
    const table = reads(stores);
    expect(Object.keys(table).sort()).toEqual(Object.keys(READS).filter((k) => k !== "roots").sort());
    for (const [name, read] of Object.entries(table)) expect(asRecorded(await read()), name).toEqual(READS[name]);
  });

  it("loads the sessions: the tool turn's messages, the second turn, the recorded event; the erased one empty", async () => {
    const view = await stores.sessions.load(SCOPE_A, "s1");
    expect(view).toMatchObject({ revision: 7, offset: 0, erased: false });
    expect(view.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant", "assistant"]);
    expect(view.messages[0]).toEqual({
      role: "user",
      blocks: [{ type: "text", text: "When are you open on Monday?" }],
      meta: { turn: ROOTS.toolTurn, at: T0 + 4 },
    });
    expect(view.messages[1]?.blocks).toEqual([{ type: "tool_call", id: "c1", name: "opening_hours", input: { day: "monday" } }]);
    expect(view.messages[2]?.blocks).toEqual([{ type: "tool_result", callId: "c1", name: "opening_hours", output: { day: "monday", open: "09:00-17:00" }, isError: false }]);
    expect(view.messages[3]?.blocks).toEqual([{ type: "text", text: "We are open 9 to 5 on Monday." }]);
    expect(view.messages[6]?.meta).toEqual({ event: { id: "evt-1", kind: "message" } });
    expect(Object.isFrozen(view.messages[0]?.blocks)).toBe(true);
    expect(await stores.sessions.load(SCOPE_A, "s3")).toEqual({ messages: [], revision: 0, offset: 0, erased: true });
    expect((await stores.sessions.load(SCOPE_A, "s2")).messages).toEqual([]);
  });

  it("returns the stored root envelope, the step results, and keeps the namespaces and tombstones apart", async () => {
    const root = await stores.rootResults.get(SCOPE_A, ROOTS.toolTurn as string, NOW);
    expect(root).toMatchObject({ resultId: ROOTS.toolTurn, sessionId: "s1", state: "stored", sensitivity: "internal" });
    const envelope = root?.envelope as { version: number; result: { reply: unknown; costMicros: number; toolCalls: unknown[] } };
    expect(envelope.version).toBe(1);
    expect(envelope.result.reply).toEqual([{ type: "text", text: "We are open 9 to 5 on Monday." }]);
    expect(envelope.result.costMicros).toBe(210);
    expect(envelope.result.toolCalls).toEqual([{ id: "c1", input: { day: "monday" }, isError: false, name: "opening_hours" }]);
    expect((await stores.rootResults.get(SCOPE_A, ROOTS.uncertain as string, NOW))?.state).toBe("reserved");
    expect(await stores.rootResults.get(SCOPE_A, ROOTS.erasedTurn as string, NOW)).toMatchObject({ state: "erased" });
    expect((await stores.rootResults.get(SCOPE_A, ROOTS.toolTurn as string, LATER))?.state).toBe("expired");
    expect((await stores.results.get(SCOPE_A, `${ROOTS.toolTurn}:step:2`, NOW))?.envelope).toEqual({ step: 2, text: "We are open 9 to 5 on Monday." });
    expect(await stores.results.get(SCOPE_A, ROOTS.toolTurn as string, NOW)).toBeUndefined();
    expect(await stores.rootResults.get(SCOPE_B, ROOTS.toolTurn as string, NOW)).toBeUndefined();
  });

  it("reads the journal, the settlements, the spend, the labels and the audit log", async () => {
    const completed = await stores.journal.get(SCOPE_A, `${ROOTS.toolTurn}:main:1`);
    expect(completed).toMatchObject({
      state: "completed",
      fenceToken: 1,
      evidence: { status: "known", usage: { inputTokens: 10, outputTokens: 5 } },
      settlementId: `${ROOTS.toolTurn}:main:1:settlement`,
      clientId: "fake",
      model: "demo",
    });
    const open = await stores.journal.list(SCOPE_A);
    expect(open.items.map((r) => [r.operationId, r.state, r.evidence])).toEqual([[`${ROOTS.uncertain}:main:1`, "received", { status: "unknown" }]]);
    const settled = await stores.settlements.get(SCOPE_A, `${ROOTS.toolTurn}:main:1:settlement`);
    expect(settled).toMatchObject({ status: "applied", day: DAY, consumers: ["billing"], receipt: { usdMicros: 105, kind: "main" } });
    expect((await stores.settlements.list(SCOPE_A)).items).toHaveLength(4);
    expect((await stores.settlements.pending(SCOPE_A, "billing")).map((r) => r.receipt.settlementId)).not.toContain(`${ROOTS.toolTurn}:main:1:settlement`);
    expect(await stores.spend.peek(SCOPE_A, "s1", DAY)).toEqual({ sessionMicros: 315, tenantDayMicros: 420 });
    expect(await stores.spend.tenantDays("clinic-a")).toEqual([{ day: DAY, usdMicros: 420 }]);
    expect(await stores.labels.get(SCOPE_A, "s1")).toEqual({ channel: "whatsapp", plan: "basic" });
    const trail = await stores.audit.query(SCOPE_A, { limit: 500 });
    expect(trail.items).toHaveLength(30);
    expect(trail.items[0]).toMatchObject({ seq: 1, trail: "lifecycle", action: "turn.started", turnId: ROOTS.toolTurn });
    expect(trail.items.filter((e) => e.turnId === ROOTS.uncertain).at(-1)).toMatchObject({ trail: "lifecycle", action: "turn.uncertain" });
  });

  it("keeps the old records' guarantees: replays, conflicts and tombstones", async () => {
    const { status: _, ...input } = recorded<SettlementRecord>("settlements.get toolTurn main 1");
    expect(await stores.settlements.settle(input as SettlementInput)).toMatchObject({ status: "replayed" });
    const changed = { ...input, receipt: { ...input.receipt, usdMicros: 1 } } as SettlementInput;
    await expect(stores.settlements.settle(changed)).rejects.toBeInstanceOf(SettlementConflictError);
    expect(await stores.spend.peek(SCOPE_A, "s1", DAY)).toEqual({ sessionMicros: 315, tenantDayMicros: 420 });

    const record = recorded<ExecutionRecord>("journal.get toolTurn main 1");
    const { state: _s, fenceToken: _f, evidence: _e, settlementId: _i, updatedAt: _u, ...claim } = record;
    expect(await stores.journal.claim(claim as ExecutionClaim)).toEqual({ status: "exists", record });

    expect(await stores.labels.put(SCOPE_A, "s1", { plan: "basic", channel: "whatsapp" })).toEqual({ channel: "whatsapp", plan: "basic" });
    await expect(stores.labels.put(SCOPE_A, "s1", { channel: "sms" })).rejects.toBeInstanceOf(SessionLabelConflictError);
    await expect(stores.labels.put(SCOPE_A, "s3", { channel: "sms" })).rejects.toBeInstanceOf(SessionLabelErasedError);
    await expect(stores.labels.put(SEALED, "s1", { channel: "sms" })).rejects.toBeInstanceOf(SessionLabelErasedError);
    await expect(stores.results.put(SCOPE_A, `${ROOTS.erasedTurn}:step:1`, { step: 1, text: "back" }, NOW)).rejects.toBeInstanceOf(ErasedError);

    const admitted = await stores.admissions.admit({ scope: SCOPE_A, sessionId: "s3", rootKey: "root-s3", kind: "turn", admissionId: "adm-s3", now: NOW, deadlineAt: NOW + 60_000 });
    expect(admitted.status).toBe("admitted");
    await expect(stores.sessions.append(SCOPE_A, "s3", [userMsg("back")], { admissionId: "adm-s3", now: NOW + 1 })).rejects.toBeInstanceOf(FenceError);
    await stores.admissions.releaseFailed(SCOPE_A, "adm-s3");

    expect(await stores.journal.reconcileExpired({ now: LATER })).toEqual([]);
    expect(await stores.admissions.releaseExpired({ now: LATER, graceMs: 0 })).toEqual([]);
  });
});

describe("sqlite: new writes on the migrated v1 fixture", () => {
  it("admits, appends, claims with a reservation on top of the old spend, and the settlement releases it", async () => {
    const path = copyFixture();
    const stores = open(path);
    const held = () => {
      const raw = new Database(path, { readonly: true });
      try {
        return raw.prepare("SELECT scope, operation_id, session_id, org, day, usd_micros FROM spend_reservations").all();
      } finally {
        raw.close();
      }
    };
    try {
      const admission = await stores.admissions.admit({ scope: SCOPE_A, sessionId: "s1", rootKey: "root-new", kind: "turn", admissionId: "adm-new", now: NOW, deadlineAt: NOW + 60_000 });
      expect(admission.status).toBe("admitted");
      expect(await stores.sessions.append(SCOPE_A, "s1", [userMsg("Open on Tuesday?", undefined, "root-new")], { admissionId: "adm-new", now: NOW + 1 })).toEqual({ revision: 8 });
      const view = await stores.sessions.load(SCOPE_A, "s1");
      expect(view.messages.slice(0, 7)).toEqual(recorded<{ messages: unknown[] }>("sessions.load A/s1").messages);
      expect(view.messages[7]?.blocks).toEqual([{ type: "text", text: "Open on Tuesday?" }]);

      // The tenant day has 420 µ$ settled by the old code: a 1000 µ$ hold fits a 1420 limit exactly, one more does not.
      const limits = { perSessionUsd: 1_000_000, perTenantDayUsd: 1_420 };
      const claim = claimOf("op-new", { scope: SCOPE_A, sessionId: "s1", rootKey: "root-new", turnId: "root-new", createdAt: NOW + 2, deadlineAt: NOW + 60_000 });
      const claimed = await stores.journal.claim(claim, { admissionId: "adm-new", reservation: { day: DAY, usdMicros: 1_000, limits, expiresAt: NOW + 3_600_000 } });
      expect(claimed.status).toBe("claimed");
      if (claimed.status !== "claimed") return;
      expect(held()).toEqual([{ scope: "clinic-a/u1", operation_id: "op-new", session_id: "s1", org: "clinic-a", day: DAY, usd_micros: 1_000 }]);
      const over = claimOf("op-over", { scope: SCOPE_A, sessionId: "s1", rootKey: "root-new", turnId: "root-new", createdAt: NOW + 3, deadlineAt: NOW + 60_000 });
      expect(await stores.journal.claim(over, { reservation: { day: DAY, usdMicros: 1, limits, expiresAt: NOW + 3_600_000 } })).toEqual({ status: "refused", cap: "perTenantDayUsd" });
      expect(await stores.journal.get(SCOPE_A, "op-over")).toBeUndefined();

      await stores.journal.dispatch(claimed.fence, NOW + 4);
      await stores.journal.receive(claimed.fence, { status: "known", usage: { inputTokens: 10, outputTokens: 5 } }, NOW + 5);
      const settlement = settlementOf("op-new:settlement", {
        scope: SCOPE_A,
        sessionId: "s1",
        day: DAY,
        at: NOW + 6,
        consumers: ["billing"],
        receipt: { operationId: "op-new", turnId: "root-new", usdMicros: 700 },
      });
      expect(await stores.settlements.settle(settlement)).toMatchObject({ status: "applied" });
      expect(held()).toEqual([]);
      expect(await stores.spend.peek(SCOPE_A, "s1", DAY)).toEqual({ sessionMicros: 1_015, tenantDayMicros: 1_120 });
      expect(await stores.spend.tenantDays("clinic-a")).toEqual([{ day: DAY, usdMicros: 1_120 }]);
      await stores.journal.settle(claimed.fence, "op-new:settlement", NOW + 7);
      expect(await stores.journal.complete(claimed.fence, NOW + 8)).toMatchObject({ state: "completed", settlementId: "op-new:settlement" });
      expect((await stores.journal.list(SCOPE_A)).items.map((r) => r.operationId)).toEqual([`${ROOTS.uncertain}:main:1`]);
      expect((await stores.settlements.list(SCOPE_A)).items.map((r) => r.receipt.settlementId).at(-1)).toBe("op-new:settlement");
      expect((await stores.settlements.pending(SCOPE_A, "billing")).map((r) => r.receipt.settlementId)).toHaveLength(4);

      // What was released is free again: 1120 settled + 300 fits under 1420.
      const after = claimOf("op-after", { scope: SCOPE_A, sessionId: "s1", rootKey: "root-new", turnId: "root-new", createdAt: NOW + 9, deadlineAt: NOW + 60_000 });
      expect((await stores.journal.claim(after, { reservation: { day: DAY, usdMicros: 300, limits, expiresAt: NOW + 3_600_000 } })).status).toBe("claimed");

      await stores.rootResults.reserve({ scope: SCOPE_A, resultId: "root-new", sessionId: "s1", binding: "b-new", sensitivity: "internal", maxChars: 1000, expiresAt: LATER, createdAt: NOW + 10 });
      expect(await stores.rootResults.put(SCOPE_A, "root-new", { reply: "Yes." }, NOW + 11, { admissionId: "adm-new" })).toMatchObject({ state: "stored", envelope: { reply: "Yes." } });
      expect((await stores.admissions.finish(SCOPE_A, "adm-new"))?.state).toBe("finished");

      await stores.audit.append({ trail: "lifecycle", action: "turn.started", scope: SCOPE_A, sessionId: "s1", turnId: "root-new", at: NOW + 12 });
      expect((await stores.audit.query(SCOPE_A, { turnId: "root-new" })).items).toEqual([
        { trail: "lifecycle", action: "turn.started", scope: SCOPE_A, sessionId: "s1", turnId: "root-new", at: NOW + 12, seq: 37 },
      ]);
      expect(await stores.labels.put(SCOPE_A, "s4", { channel: "web" })).toEqual({ channel: "web" });
    } finally {
      stores.close();
    }

    // Reopening the migrated file applies nothing again and still reads the old records.
    const again = open(path);
    try {
      expect(again.schema).toEqual({ main: 2, root: 1 });
      expect(versionsOf(path).main).toHaveLength(2);
      expect(asRecorded(await again.rootResults.get(SCOPE_A, ROOTS.toolTurn as string, NOW))).toEqual(READS["rootResults.get toolTurn"]);
      expect((await again.sessions.load(SCOPE_A, "s1")).revision).toBe(8);
    } finally {
      again.close();
    }
  });
});
