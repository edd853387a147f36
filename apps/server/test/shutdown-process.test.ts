import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { DurableStores } from "@alma-harness/core/stores";
import { createPostgresStores } from "@alma-harness/store-postgres";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { mintToken } from "../src/http/auth.js";
import { sqlitePath } from "../src/runtime.js";
import { ANA, listeningUrl, logLines, SUNRISE } from "./helpers.js";

// The sources, as the bin runs them when the package is not built (a stale dist/ must not stand in).
const SOURCE = fileURLToPath(new URL("../src/cli/process.ts", import.meta.url));
const TSX = import.meta.resolve("tsx");
const JWT_SECRET = "process-test-secret-process-test-secret-0123";
const ADMIN = "adm_process_test_operator_token_0123456789";
const SCOPE = { org: SUNRISE, uid: ANA };
const PG_URL = process.env.ALMA_TEST_DATABASE_URL;

/** Where a test's hosts keep their state: SQLite under the home, or a fresh PostgreSQL database. */
interface Target {
  readonly name: string;
  readonly env: (home: string) => Record<string, string>;
  readonly open: (home: string) => Promise<DurableStores & { close(): unknown }>;
  readonly drop?: () => Promise<void>;
}

const SQLITE: Target = {
  name: "SQLite",
  env: () => ({}),
  open: async (home) => createSqliteStores({ path: sqlitePath(home) }),
};

/** A fresh database on the test server, migrated, for one test's processes. */
async function postgresTarget(): Promise<Target> {
  const name = `alma_proc_${Math.random().toString(16).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_URL as string);
  url.pathname = `/${name}`;
  const connectionString = url.toString();
  (await createPostgresStores({ connectionString, migrate: true })).close();
  return {
    name: "PostgreSQL",
    env: () => ({ ALMA_DATABASE_URL: connectionString }),
    open: (_home) => createPostgresStores({ connectionString }),
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

interface Serve {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;
  out(): string;
}

/** A real `alma serve` on the SQLite store under `home`, once it listens. */
async function serve(home: string, target: Target): Promise<Serve> {
  const child = spawn(
    process.execPath,
    ["--conditions=alma-source", "--import", TSX, SOURCE, "serve", "--port", "0"],
    {
      env: {
        PATH: process.env.PATH,
        ALMA_HOME: home,
        ALMA_PROVIDER: "demo",
        ALMA_JWT_SECRET: JWT_SECRET,
        ALMA_ADMIN_TOKEN: ADMIN,
        ALMA_SHUTDOWN_GRACE_MS: "20000",
        ...target.env(home),
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  let err = "";
  child.stdout?.on("data", (c: Buffer) => {
    out += c.toString("utf8");
  });
  child.stderr?.on("data", (c: Buffer) => {
    err += c.toString("utf8");
  });
  const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  while (listeningUrl(out) === undefined) {
    if (child.exitCode !== null) throw new Error(`serve exited early: ${err}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const url = listeningUrl(out) as string;
  return { child, url, exited, out: () => out };
}

const admin = (url: string, path: string, method = "GET") =>
  fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${ADMIN}` } });

/** Asks the host to book; the turn parks on the operator's ask. Returns the root key and ask id. */
async function parkBooking(url: string): Promise<{ rootKey: string; askId: string }> {
  const { token } = await mintToken(new TextEncoder().encode(JWT_SECRET), SCOPE);
  const started = await fetch(`${url}/v1/sessions/s1/turns`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      "idempotency-key": "book-1",
    },
    body: JSON.stringify({ input: "Please book an appointment" }),
  });
  const body = (await started.json()) as { rootKey: string; status: string };
  expect([started.status, body.status]).toEqual([202, "awaiting_approval"]);
  const asks = (await (await admin(url, "/v1/admin/asks")).json()) as { asks: { id: string }[] };
  expect(asks.asks).toHaveLength(1);
  return { rootKey: body.rootKey, askId: asks.asks[0]?.id as string };
}

/** Polls the turn until it settles, with the patient's token. */
async function settled(url: string, rootKey: string): Promise<Record<string, unknown>> {
  const { token } = await mintToken(new TextEncoder().encode(JWT_SECRET), SCOPE);
  for (let i = 0; i < 400; i++) {
    const res = await fetch(`${url}/v1/turns/${rootKey}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await res.json()) as Record<string, unknown>;
    if (body.status !== "in_progress" && body.status !== "awaiting_approval") return body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the turn never settled");
}

/** What the store says of the turn: the booking ran once, each model call was sent once. */
async function onceEach(target: Target, home: string, rootKey: string) {
  const stores = await target.open(home);
  try {
    const trail = async (t: "policy" | "lifecycle") =>
      (await stores.audit.query(SCOPE, { turnId: rootKey, trail: t })).items;
    const lifecycle = await trail("lifecycle");
    // A handler's run ends in exactly one `tool.result` record of its call: two runs would leave two.
    const callOf = (e: (typeof lifecycle)[number]) => (e as { callId?: string }).callId;
    const book = lifecycle.find(
      (e) => e.trail === "lifecycle" && e.action === "tool.call" && e.detail === "book_appointment",
    );
    const handled = lifecycle.filter(
      (e) =>
        e.trail === "lifecycle" &&
        e.action === "tool.result" &&
        book !== undefined &&
        callOf(e) === callOf(book),
    );
    const requests = lifecycle.filter(
      (e) => e.trail === "lifecycle" && e.action === "model.request",
    );
    const journal = await stores.journal.list(SCOPE, { resolved: true });
    const sent = journal.items.filter(
      (r) => r.rootKey === rootKey && r.kind === "main" && r.state !== "not_dispatched",
    );
    const view = await stores.sessions.load(SCOPE, "s1");
    const booked = view.messages.flatMap((m) =>
      m.blocks.filter((b) => b.type === "tool_result" && b.name === "book_appointment"),
    );
    return {
      holder: await stores.admissions.holder(SCOPE, "s1"),
      handled: handled.length,
      lifecycle: lifecycle.map((e) =>
        e.trail === "lifecycle" ? `${e.action}:${e.detail ?? ""}` : "",
      ),
      requests: requests.length,
      dispatched: sent.length,
      distinctCalls: new Set(sent.map((r) => r.operationId)).size,
      booked,
      policy: (await trail("policy")).map((e) => (e.trail === "policy" ? [e.action, e.by] : [])),
    };
  } finally {
    await stores.close();
  }
}

/**
 * A turn parked on the operator's ask survives its process (issue 25): after SIGTERM (the ask is
 * kept, never denied by the shutdown) or SIGKILL, another `alma serve` on the same store lists the
 * ask, takes the approval, and the turn completes with one booking and no model call sent twice.
 */
const CASES = [
  ["SQLite", "SIGTERM"],
  ["SQLite", "SIGKILL"],
  ["PostgreSQL", "SIGKILL"],
] as const;

describe("alma serve: a parked ask survives the process", () => {
  for (const [store, signal] of CASES)
    it.skipIf(store === "PostgreSQL" && !PG_URL)(
      `${store}: ${signal}, a new process, approve: the turn completes with one booking`,
      async () => {
        const home = mkdtempSync(join(tmpdir(), `alma-${signal.toLowerCase()}-`));
        const target = store === "SQLite" ? SQLITE : await postgresTarget();
        let first: Serve | undefined;
        let second: Serve | undefined;
        try {
          first = await serve(home, target);
          const { rootKey, askId } = await parkBooking(first.url);
          first.child.kill(signal);
          const [code] = await first.exited;
          if (signal === "SIGTERM") {
            expect(code).toBe(0);
            expect(logLines(first.out()).find((l) => l.msg === "stopped")).toMatchObject({
              asksDenied: 0,
              turnsCancelled: 0,
            });
          }
          const parked = await onceEach(target, home, rootKey);
          // The parked turn still holds its session: nothing decided it, nobody released it.
          expect(parked.holder?.rootKey).toBe(rootKey);
          expect(parked.policy.some(([action]) => action === "permission.resolved")).toBe(false);

          second = await serve(home, target);
          const listed = (await (await admin(second.url, "/v1/admin/asks")).json()) as {
            asks: { id: string; rootKey: string; expiresAt: number; ageMs: number }[];
          };
          expect(listed.asks).toEqual([
            expect.objectContaining({ id: askId, rootKey, expiresAt: expect.any(Number) }),
          ]);
          const approved = await admin(second.url, `/v1/admin/asks/${askId}/approve`, "POST");
          expect(approved.status).toBe(200);
          expect(await settled(second.url, rootKey)).toMatchObject({ status: "completed" });
          // A second click finds nothing to decide.
          expect((await admin(second.url, `/v1/admin/asks/${askId}/approve`, "POST")).status).toBe(
            404,
          );
          second.child.kill("SIGTERM");
          await second.exited;
          const after = await onceEach(target, home, rootKey);
          expect(after.holder).toBeUndefined();
          expect(after.handled, after.lifecycle.join(" ")).toBe(1);
          expect(after.booked).toHaveLength(1);
          // Two main calls before the park, one after: none sent again by the resume.
          expect([after.requests, after.dispatched]).toEqual([3, 3]);
          expect(after.distinctCalls).toBe(after.dispatched);
          expect(after.policy.filter(([action]) => action === "permission.resolved")).toEqual([
            ["permission.resolved", "operator"],
          ]);
        } finally {
          for (const s of [first, second])
            if (s && s.child.exitCode === null) s.child.kill("SIGKILL");
          rmSync(home, { recursive: true, force: true });
          await target.drop?.();
        }
      },
      90_000,
    );
});
