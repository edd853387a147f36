import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineTool, FenceError, type Scope } from "@alma-harness/core";
import { FakeModelClient, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { memory, postgres, type Runtime, type RuntimeConfig, sqlite } from "@alma-harness/runtime";
import { type Canaries, type ErasureFixture, erasureContract, type ScanHit, scanFiles, scanPostgres, scanSqlite, scanValue } from "@alma-harness/testing";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { clinicConfig, skipNote } from "./open.js";

const DATABASE_URL = process.env.ALMA_TEST_DATABASE_URL;
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The runner every fixture builds: one registered tool, `lookup`, answering with the current session's patient and media URI. */
/** What the fixture's tool handler knows: the session being seeded, and an erasure to run mid-turn. */
interface Current {
  c?: Canaries;
  during?: () => Promise<unknown>;
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
  return clinicConfig(model, { tools: [lookup] });
}

const request = (scope: Scope, c: Canaries, key: string) => ({
  scope,
  sessionId: c.sessionId,
  idempotencyKey: key,
  input: `Patient ${c.patient}, callback ${c.sessionId}, portal key ${c.apiKey}, scan at ${c.mediaUri}`,
  intent: { tier: "balanced" as const, sensitivity: "internal" as const },
});

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
      // A grouped store set commits the put at its next durability point: the scan reads from outside.
      await rt.stores.barrier?.commit();
    },
    retry: async (scope, c) => {
      const statuses = [(await rt.runner.runTurn(request(scope, c, "k1"))).status, (await rt.runner.runTurn(request(scope, c, "k2"))).status];
      // A late event of the erased session is refused before it is admitted.
      const event = { id: `ev-${c.sessionId}`, at: "2026-01-01T00:00:00Z", kind: "message" as const, role: "user" as const, blocks: [{ type: "text" as const, text: c.patient }] };
      await expect(rt.runner.recordEvents({ scope, sessionId: c.sessionId, events: [event] })).rejects.toBeInstanceOf(FenceError);
      return statuses;
    },
    eraseMidTurn: async (scope, c) => {
      current.c = c;
      let report: Awaited<ReturnType<Runtime["erase"]>> | undefined;
      current.during = async () => {
        report = await rt.erase(scope, c.sessionId);
      };
      model.push(scriptedToolCall({ name: "lookup", input: { query: c.query } }), scriptedText(`Booked ${c.patient}.`));
      try {
        const view = await rt.runner.runTurn(request(scope, c, "k3"));
        return { status: view.status, report: report ?? { fencedAdmissions: -1 } };
      } finally {
        current.during = undefined;
      }
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
function scanSqliteFiles(main: string, root: string | undefined, needles: readonly string[]): ScanHit[] {
  const db = new Database(main, { readonly: true });
  try {
    if (root) db.prepare("ATTACH DATABASE ? AS root").run(root);
    return scanSqlite(db, needles, root ? ["main", "root"] : ["main"]);
  } finally {
    db.close();
  }
}

function sqliteFixture(layout: "main" | "attached"): Promise<ErasureFixture> {
  const dir = mkdtempSync(join(tmpdir(), "alma-erase-"));
  dirs.push(dir);
  const main = join(dir, "alma.db");
  const root = layout === "attached" ? join(dir, "alma.root-results.db") : undefined;
  return fixture(
    async (cfg) => sqlite({ ...cfg, store: { path: main, rootResults: layout } }),
    async (_rt, needles) => scanSqliteFiles(main, root, needles),
    () => [main, `${main}-wal`, ...(root ? [root, `${root}-wal`] : [])],
  );
}

erasureContract("memory", () => fixture(async (cfg) => memory(cfg), async (rt, needles) => scanValue(rt.stores, needles, "stores")), { describe, it, expect });
erasureContract("sqlite", () => sqliteFixture("main"), { describe, it, expect });
erasureContract("sqlite attached", () => sqliteFixture("attached"), { describe, it, expect });

let schemas = 0;
describe.skipIf(!DATABASE_URL)(`postgres${skipNote(DATABASE_URL !== undefined)}`, () => {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
  afterAll(() => pool.end());
  erasureContract(
    "postgres",
    () => {
      schemas += 1;
      const schema = `erase_${process.pid}_${schemas}`;
      const rootSchema = `erase_root_${process.pid}_${schemas}`;
      return fixture(
        (cfg) => postgres({ ...cfg, store: { connectionString: DATABASE_URL, schema, rootSchema, migrate: true } }),
        (_rt, needles) => scanPostgres(pool, [schema, rootSchema], needles),
      );
    },
    { describe, it, expect },
  );
});
