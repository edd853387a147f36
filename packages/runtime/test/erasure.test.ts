import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  defineTool,
  FenceError,
  type ModelClient,
  type ModelJob,
  type ModelJobStore,
  type Scope,
} from "@alma-harness/core";
import { FakeModelClient, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import {
  memory,
  postgres,
  type RoutineStores,
  type Runtime,
  type RuntimeConfig,
  sqlite,
} from "@alma-harness/runtime";
import {
  type Canaries,
  canariesOf,
  type ErasureFixture,
  erasureContract,
  jobItemOf,
  jobOf,
  needlesOf,
  observationOf,
  type ScanHit,
  scanFiles,
  scanPostgres,
  scanSqlite,
  scanValue,
} from "@alma-harness/testing";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { clinicConfig, skipNote } from "./open.js";

const DATABASE_URL = process.env.ALMA_TEST_DATABASE_URL;
const dirs: string[] = [];
let steps = 0;
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A claimed batch job of one item of `sessionId` (its ids free of the session's). */
function batchJobOf(scope: Scope, sessionId: string): ModelJob {
  const n = sessionId.slice(-4);
  return {
    ...jobOf(`job-${n}`, 1, { scope }),
    items: [jobItemOf(1, { sessionId, operationId: `job-${n}:item:1`, rootKey: `root-job-${n}` })],
  };
}

/**
 * A turn of the session parked on an ask (issue 25) whose continuation holds the session's canaries,
 * then claimed by a run that ended: the parked row stays (`resuming`) while the session is free, and
 * erasure must take it (and its ask) with the rest of the session.
 */
async function parkAndResume(rt: Runtime, scope: Scope, c: Canaries): Promise<void> {
  const tag = c.sessionId.slice(-4);
  const now = Date.UTC(2026, 0, 1, 2);
  const turn = { scope, sessionId: c.sessionId, rootKey: `root-park-${tag}` };
  await rt.stores.admissions.admit({
    ...turn,
    kind: "turn",
    admissionId: `park-${tag}`,
    now,
    deadlineAt: now + 60_000,
  });
  await rt.stores.parked.park({
    ...turn,
    admissionId: `park-${tag}`,
    continuation: {
      messages: [{ role: "user", text: `Patient ${c.patient}, key ${c.apiKey}, ${c.mediaUri}` }],
      query: c.query,
    },
    // The turn's messages stored once each: content, erased with the turn.
    outputs: [
      {
        digest: tag.padStart(64, "f"),
        message: { role: "assistant", blocks: [{ type: "text", text: `For ${c.patient}` }] },
      },
    ],
    asks: [
      {
        askId: `ask_${tag.padStart(32, "0")}`,
        callId: `call-${tag}`,
        tool: c.tool,
        action: "read",
        digest: tag.padStart(64, "0"),
      },
    ],
    now: now + 1,
    expiresAt: now + 3_600_000,
  });
  const claimed = await rt.stores.parked.claim({
    scope,
    rootKey: turn.rootKey,
    admissionId: `resume-${tag}`,
    now: now + 2,
    deadlineAt: now + 60_000,
  });
  expect(claimed.status).toBe("claimed");
  await rt.stores.admissions.finish(scope, `resume-${tag}`);
}

/** The runner every fixture builds: one registered tool, `lookup`, answering with the current session's patient and media URI. */
/** What the fixture's tool handler knows: the session being seeded, and an erasure to run mid-turn. */
interface Current {
  c?: Canaries;
  during?: () => Promise<unknown>;
  /** Awaited before the model's stream starts (after the call's claim, reservation and dispatch). */
  beforeStream?: () => Promise<unknown>;
}

/** The scripted model, behind a stream that waits for `current.beforeStream` when set. */
function gatedModel(model: FakeModelClient, current: Current): ModelClient {
  return {
    id: model.id,
    provider: model.provider,
    validate: (request) => model.validate(request),
    stream: (request, signal) => ({
      async *[Symbol.asyncIterator]() {
        await current.beforeStream?.();
        yield* model.stream(request, signal);
      },
    }),
  };
}

function canaryRuntimeConfig(model: FakeModelClient, current: Current): RuntimeConfig {
  const lookup = defineTool({
    name: "lookup",
    description: "Looks a patient record up.",
    input: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    handler: async () => {
      await current.during?.();
      return { patient: current.c?.patient ?? "", scan: current.c?.mediaUri ?? "" };
    },
  });
  return clinicConfig(gatedModel(model, current), { tools: [lookup] });
}

const request = (scope: Scope, c: Canaries, key: string) => ({
  scope,
  sessionId: c.sessionId,
  idempotencyKey: key,
  input: `Patient ${c.patient}, callback ${c.sessionId}, portal key ${c.apiKey}, scan at ${c.mediaUri}`,
  intent: { tier: "balanced" as const, sensitivity: "internal" as const },
});

/** A gate a step waits at (`gate`, opened by `release`) and a signal that it got there (`inGate`, sent by `entered`). */
function gates() {
  let entered: () => void = () => undefined;
  const inGate = new Promise<void>((resolve) => {
    entered = resolve;
  });
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { gate, release, entered, inGate };
}

/** The fixture over one runtime: `scan` and `files` are the composition's own. */
async function fixture(
  open: (cfg: RuntimeConfig) => Promise<Runtime>,
  scan: (rt: Runtime, needles: readonly string[]) => Promise<readonly ScanHit[]>,
  files?: () => readonly string[],
): Promise<ErasureFixture> {
  const model = new FakeModelClient();
  const current: Current = {};
  const rt = await open(canaryRuntimeConfig(model, current));
  return {
    seed: async (scope, c) => {
      current.c = c;
      model.push(
        scriptedToolCall([
          { name: "lookup", input: { query: c.query } },
          { name: c.tool, input: { uri: c.mediaUri } },
        ]),
        scriptedText(`Booked ${c.patient}; key ${c.apiKey} noted.`),
      );
      const view = await rt.runner.runTurn(request(scope, c, "k1"));
      expect(view.status).toBe("completed");
      await rt.stores.labels.put(scope, c.sessionId, { mrn: c.label });
      // A single call on the session (a triage of its message): its stored result, claim and receipt are the session's too.
      model.push(scriptedText(JSON.stringify({ label: `${c.patient} ${c.apiKey}` })));
      const step = await rt.steps.run({
        scope,
        sessionId: c.sessionId,
        idempotencyKey: `triage-${++steps}`,
        intent: { tier: "fast", sensitivity: "confidential" },
        prompt: `Triage: patient ${c.patient}, portal key ${c.apiKey}.`,
        output: {
          name: "triage",
          schema: {
            type: "object",
            properties: { label: { type: "string" } },
            required: ["label"],
          },
        },
      });
      expect(step.status).toBe("completed");
      // Late usage of one of the session's calls, as a cut stream would leave it.
      await rt.stores.usageInbox?.record(
        observationOf(`late-${c.sessionId.slice(-4)}`, {
          scope,
          sessionId: c.sessionId,
          observedAt: Date.UTC(2026, 0, 1),
        }),
      );
      // What memory extraction would keep of the session: an episode and a profile fact holding its canaries.
      const source = { sessionId: c.sessionId, turnId: "turn-1", at: Date.UTC(2026, 0, 1) };
      const tag = c.sessionId.slice(-4);
      await rt.stores.episodes.put({
        scope,
        episodeId: `ep-${tag}`,
        source,
        sensitivity: "confidential",
        summary: `${c.patient} asked about ${c.query}; portal key ${c.apiKey}.`,
      });
      await rt.stores.profiles.put({
        scope,
        factId: `f-${tag}`,
        key: `allergy.s${tag}`,
        text: `${c.patient} is allergic to penicillin (${c.label}).`,
        source,
        sensitivity: "confidential",
        confidence: 0.9,
      });
      // A batch job's item of the session (spec: model-jobs): kept under the session's mark.
      await (rt.stores as { readonly modelJobs?: ModelJobStore }).modelJobs?.create(
        batchJobOf(scope, c.sessionId),
      );
      // A routine run whose turn ran in the session (a routine's session id is its own): erasure keeps it under the mark.
      const runs = (rt.stores as Partial<RoutineStores>).routineRuns;
      await runs?.claim({
        scope,
        routineId: "nightly",
        slot: Date.UTC(2026, 0, 1, 1),
        sessionId: c.sessionId,
        owner: "host-1",
        at: Date.UTC(2026, 0, 1, 1),
      });
      await parkAndResume(rt, scope, c);
      // A grouped store set commits the put at its next durability point: the scan reads from outside.
      await rt.stores.barrier?.commit();
    },
    retry: async (scope, c) => {
      const statuses = [
        (await rt.runner.runTurn(request(scope, c, "k1"))).status,
        (await rt.runner.runTurn(request(scope, c, "k2"))).status,
      ];
      // A late event of the erased session is refused before it is admitted.
      const event = {
        id: `ev-${c.sessionId}`,
        at: "2026-01-01T00:00:00Z",
        kind: "message" as const,
        role: "user" as const,
        blocks: [{ type: "text" as const, text: c.patient }],
      };
      await expect(
        rt.runner.recordEvents({ scope, sessionId: c.sessionId, events: [event] }),
      ).rejects.toBeInstanceOf(FenceError);
      return statuses;
    },
    eraseMidTurn: async (scope, c) => {
      current.c = c;
      // The handler waits at a gate: the host erases from outside the turn (another request), then it goes on.
      let entered: () => void = () => undefined;
      const inHandler = new Promise<void>((resolve) => {
        entered = resolve;
      });
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      current.during = async () => {
        entered();
        await gate;
      };
      model.push(
        scriptedToolCall({ name: "lookup", input: { query: c.query } }),
        scriptedText(`Booked ${c.patient}.`),
      );
      try {
        const turn = rt.runner.runTurn(request(scope, c, "k3"));
        await inHandler;
        const report = await rt.erase(scope, c.sessionId);
        release();
        return { status: (await turn).status, report };
      } finally {
        current.during = undefined;
      }
    },
    eraseMidCall: async (scope, c) => {
      current.c = c;
      const { gate, release, entered, inGate } = gates();
      current.beforeStream = async () => {
        entered();
        await gate;
      };
      model.push(scriptedText(`Booked ${c.patient}.`));
      try {
        const turn = rt.runner.runTurn(request(scope, c, "k4"));
        await inGate;
        const report = await rt.erase(scope, c.sessionId);
        current.beforeStream = undefined;
        release();
        return { status: (await turn).status, report };
      } finally {
        current.beforeStream = undefined;
      }
    },
    turnsWhile: async (scope, sessionIds, during) => {
      for (const _ of sessionIds) model.push(scriptedText("We open at nine."));
      const turns = sessionIds.map((sessionId) =>
        rt.runner.runTurn({
          scope,
          sessionId,
          idempotencyKey: "k1",
          input: "When do you open?",
          intent: { tier: "balanced", sensitivity: "internal" },
        }),
      );
      const [views] = await Promise.all([Promise.all(turns), during()]);
      return views.map((v) => v.status);
    },
    eraseSession: (scope, sessionId) => rt.erase(scope, sessionId),
    eraseScope: (scope) => rt.eraseScope(scope),
    scan: (needles) => scan(rt, needles),
    ...(files ? { scanFiles: (needles: readonly string[]) => scanFiles(files(), needles) } : {}),
    stores: rt.stores,
    close: () => rt.close(),
  };
}

/** A second, read-only connection to the files (what anyone holding them reads), closed at once. */
function scanSqliteFiles(
  main: string,
  root: string | undefined,
  needles: readonly string[],
): ScanHit[] {
  const db = new Database(main, { readonly: true });
  try {
    if (root) db.prepare("ATTACH DATABASE ? AS root").run(root);
    return scanSqlite(db, needles, root ? ["main", "root"] : ["main"]);
  } finally {
    db.close();
  }
}

function sqliteFixture(
  layout: "main" | "attached",
  paths: { main?: string; root?: string } = {},
): Promise<ErasureFixture> {
  const dir = mkdtempSync(join(tmpdir(), "alma-erase-"));
  dirs.push(dir);
  const main = join(dir, "alma.db");
  const root = layout === "attached" ? join(dir, "alma.root-results.db") : undefined;
  paths.main = main;
  paths.root = root;
  return fixture(
    async (cfg) => sqlite({ ...cfg, store: { path: main, rootResults: layout } }),
    async (_rt, needles) => scanSqliteFiles(main, root, needles),
    () => [
      main,
      `${main}-wal`,
      `${main}-shm`,
      ...(root ? [root, `${root}-wal`, `${root}-shm`] : []),
    ],
  );
}

erasureContract(
  "memory",
  () =>
    fixture(
      async (cfg) => memory(cfg),
      async (rt, needles) => scanValue(rt.stores, needles, "stores"),
    ),
  { describe, it, expect },
);
erasureContract("sqlite", () => sqliteFixture("main"), { describe, it, expect });
erasureContract("sqlite attached", () => sqliteFixture("attached"), { describe, it, expect });

let schemas = 0;
/** Every schema these tests made, dropped after the file. */
const made: string[] = [];
afterAll(async () => {
  if (!DATABASE_URL || made.length === 0) return;
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
  try {
    for (const name of made) await pool.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
  } finally {
    await pool.end();
  }
}, 120_000);

describe.skipIf(!DATABASE_URL)(`postgres${skipNote(DATABASE_URL !== undefined)}`, () => {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
  afterAll(() => pool.end());
  erasureContract(
    "postgres",
    () => {
      schemas += 1;
      const schema = `erase_${process.pid}_${schemas}`;
      const rootSchema = `erase_root_${process.pid}_${schemas}`;
      made.push(schema, rootSchema);
      return fixture(
        (cfg) =>
          postgres({
            ...cfg,
            store: { connectionString: DATABASE_URL, schema, rootSchema, migrate: true },
          }),
        (_rt, needles) => scanPostgres(pool, [schema, rootSchema], needles),
      );
    },
    { describe, it, expect },
  );
});

/** Seeds the three sessions; `fault` makes the next erasure fail at its last table; `heal` undoes it. */
async function failedMidway(
  fx: ErasureFixture,
  fault: () => Promise<void>,
  heal: () => Promise<void>,
): Promise<void> {
  const alpha = canariesOf("alpha");
  const scope = { org: "clinic-erase", uid: "desk-1" };
  await fx.seed(scope, alpha);
  await fx.seed(scope, canariesOf("bravo"));
  const planted = multisetOf(await fx.scan(needlesOf(alpha)));
  await fault();
  await expect(fx.eraseSession(scope, alpha.sessionId)).rejects.toThrow();
  expect(
    multisetOf(await fx.scan(needlesOf(alpha))),
    "a failed erasure rolled back whole: every row as it was",
  ).toEqual(planted);
  await heal();
  expect(await fx.eraseSession(scope, alpha.sessionId)).toEqual({ fencedAdmissions: 0 });
  expect(await fx.scan(needlesOf(alpha)), "running it again finished the job").toEqual([]);
}

const multisetOf = (hits: readonly ScanHit[]) => hits.map((h) => `${h.where}|${h.needle}`).sort();

describe("an erasure that fails at its last table (the root results) changes nothing, and running it again finishes it", () => {
  for (const layout of ["main", "attached"] as const) {
    it(`sqlite, root results ${layout === "main" ? "in the main file" : "in the attached file"}`, async () => {
      const paths: { main?: string; root?: string } = {};
      const fx = await sqliteFixture(layout, paths);
      const ddl = (sql: string) => {
        const db = new Database(
          layout === "main" ? (paths.main as string) : (paths.root as string),
        );
        try {
          db.exec(sql);
        } finally {
          db.close();
        }
      };
      const table = layout === "main" ? "root_results" : "results";
      try {
        await failedMidway(
          fx,
          async () =>
            ddl(
              `CREATE TRIGGER fail_erase BEFORE UPDATE ON ${table} BEGIN SELECT RAISE(ABORT, 'injected'); END`,
            ),
          async () => ddl("DROP TRIGGER fail_erase"),
        );
      } finally {
        await fx.close?.();
      }
    });
  }

  it.skipIf(!DATABASE_URL)(`postgres${skipNote(DATABASE_URL !== undefined)}`, async () => {
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
    const schema = `erase_fault_${process.pid}`;
    const rootSchema = `erase_fault_root_${process.pid}`;
    made.push(schema, rootSchema);
    const fx = await fixture(
      (cfg) =>
        postgres({
          ...cfg,
          store: { connectionString: DATABASE_URL, schema, rootSchema, migrate: true },
        }),
      (_rt, needles) => scanPostgres(pool, [schema, rootSchema], needles),
    );
    try {
      await failedMidway(
        fx,
        async () => {
          await pool.query(
            `CREATE FUNCTION ${rootSchema}.fail_erase() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected'; END $$`,
          );
          await pool.query(
            `CREATE TRIGGER fail_erase BEFORE UPDATE ON ${rootSchema}.results FOR EACH ROW EXECUTE FUNCTION ${rootSchema}.fail_erase()`,
          );
        },
        async () => {
          await pool.query(`DROP TRIGGER fail_erase ON ${rootSchema}.results`);
        },
      );
    } finally {
      await fx.close?.();
      await pool.end();
    }
  });
});
