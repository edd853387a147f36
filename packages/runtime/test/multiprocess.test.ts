import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  type ConversationConfig,
  conversationRootKey,
  createConversationRunner,
  type UncertainTurnEvent,
} from "@alma-harness/conversation";
import { ManualClock } from "@alma-harness/core/testing";
import { createPostgresStores } from "@alma-harness/store-postgres";
import { DEPLOYMENT } from "./workers/deployment.js";

/** Straight to PostgreSQL, and through PgBouncer in transaction pooling mode (scripts/pgbouncer-up.sh). */
const TARGETS = [
  { name: "PostgreSQL", tag: "pg", env: "ALMA_TEST_DATABASE_URL" },
  {
    name: "PostgreSQL behind PgBouncer (transaction pooling)",
    tag: "pgb",
    env: "ALMA_TEST_PGBOUNCER_URL",
  },
] as const;
const WORKER = fileURLToPath(new URL("./workers/turn-worker.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const SCOPE = { org: "mp", uid: "u" };

/** A runner only for maintenance (what a host's tick calls); it never runs a turn. */
const MAINTENANCE: Omit<ConversationConfig, "stores"> = {
  clients: [
    {
      id: "none",
      provider: "fake",
      validate: () => undefined,
      stream: () => ({
        [Symbol.asyncIterator]: () => ({ next: async () => ({ done: true, value: undefined }) }),
      }),
    },
  ],
  policy: {
    resolve: () => ({ clientId: "none", model: "demo", maxOutputTokens: 256, cache: false }),
  },
  prompt: "maintenance",
  ...DEPLOYMENT,
};

interface Line {
  pid: number;
  type: string;
  key?: string;
  sessionId?: string;
  status?: string;
  replayed?: boolean;
}

function worker(
  url: string,
  spec: object,
): {
  child: ChildProcess;
  lines: Line[];
  done: Promise<number | null>;
  when: (p: (l: Line) => boolean) => Promise<void>;
} {
  const child = spawn(
    process.execPath,
    ["--conditions=alma-source", "--import", "tsx", WORKER, JSON.stringify(spec)],
    {
      cwd: ROOT,
      env: { ...process.env, ALMA_TEST_DATABASE_URL: url },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const lines: Line[] = [];
  const waiters: { p: (l: Line) => boolean; resolve: () => void }[] = [];
  let buffer = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8");
    let at = buffer.indexOf("\n");
    while (at >= 0) {
      const line = JSON.parse(buffer.slice(0, at)) as Line;
      buffer = buffer.slice(at + 1);
      lines.push(line);
      for (const w of waiters.filter((w) => w.p(line))) w.resolve();
      at = buffer.indexOf("\n");
    }
  });
  const done = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const when = (p: (l: Line) => boolean) =>
    lines.some(p)
      ? Promise.resolve()
      : new Promise<void>((resolve) => waiters.push({ p, resolve }));
  return { child, lines, done, when };
}

for (const target of TARGETS) {
  const url = process.env[target.env];
  describe.skipIf(!url)(
    `many host processes on one ${target.name}${url ? "" : ` (skipped: ${target.env} is not set)`}`,
    () => {
      it("dispatches each key at most once, never admits two turns of a session at once, and recovers a killed worker", async () => {
        const schema = `mp_${target.tag}_${process.pid}`;
        const rootSchema = `mp_${target.tag}_root_${process.pid}`;
        const setup = await createPostgresStores({
          connectionString: url,
          schema,
          rootSchema,
          migrate: true,
        });
        const jobs: { sessionId: string; key: string }[] = [];
        for (let s = 0; s < 4; s++)
          for (let k = 0; k < 3; k++) jobs.push({ sessionId: `session-${s}`, key: `s${s}-k${k}` });
        const shuffled = (seed: number) =>
          [...jobs].sort(
            (a, b) =>
              ((a.key.charCodeAt(1) * seed + a.key.charCodeAt(4)) % 7) -
              ((b.key.charCodeAt(1) * seed + b.key.charCodeAt(4)) % 7),
          );
        const workers = [1, 2, 3].map((seed) =>
          worker(url as string, { schema, rootSchema, jobs: shuffled(seed) }),
        );
        // One killed process per journal boundary: inside the first call (its record dispatching), inside
        // the tool handler (the first call's record completed), inside the second call.
        const boundaries = ["call1", "tool", "call2"] as const;
        const victims = boundaries.map((hang) =>
          worker(url as string, {
            schema,
            rootSchema,
            jobs: [{ sessionId: `session-killed-${hang}`, key: `killed-${hang}` }],
            hang,
          }),
        );
        for (const victim of victims) {
          await victim.when((l) => l.type === "hanging");
          victim.child.kill("SIGKILL");
          await victim.done;
        }
        const codes = await Promise.all(workers.map((w) => w.done));
        expect(codes).toEqual([0, 0, 0]);
        const lines = workers.flatMap((w) => w.lines);

        // Each key dispatched the model at most once across all processes (a turn is two calls: tool, answer).
        for (const job of jobs) {
          const dispatches = lines.filter((l) => l.type === "dispatch" && l.key === job.key).length;
          expect(dispatches, job.key).toBeLessThanOrEqual(2);
        }
        // Every session's log holds each completed turn exactly once, contiguous and in order.
        for (let s = 0; s < 4; s++) {
          const view = await setup.sessions.load(SCOPE, `session-${s}`);
          const turns = view.messages.map((m) => m.meta?.turn);
          const seen: string[] = [];
          for (const [i, turn] of turns.entries()) {
            if (turn !== turns[i - 1]) {
              expect(
                seen,
                "a turn's messages are contiguous (never two turns at once)",
              ).not.toContain(turn);
              seen.push(turn as string);
            }
          }
          for (const turn of seen) {
            const own = view.messages.filter((m) => m.meta?.turn === turn);
            expect(own.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
          }
          const completed = new Set(
            lines
              .filter(
                (l) =>
                  l.type === "view" && l.sessionId === `session-${s}` && l.status === "completed",
              )
              .map((l) => conversationRootKey(SCOPE, `session-${s}`, l.key as string)),
          );
          expect(new Set(seen)).toEqual(completed);
          // Not vacuous: every session completed turns (a tool call id the journal refuses once made them all uncertain).
          expect(completed.size, `session-${s}`).toBeGreaterThan(0);
        }

        // Each killed worker's session is held until maintenance, which reports every killed turn to
        // onUncertainTurn (cause expired); its journal records are listed until reconciled; an
        // expired dispatching record is fenced, never re-sent.
        const killed = boundaries.map((hang) => ({
          hang,
          sessionId: `session-killed-${hang}`,
          rootKey: conversationRootKey(SCOPE, `session-killed-${hang}`, `killed-${hang}`),
        }));
        const holders = await Promise.all(
          killed.map((k) => setup.admissions.holder(SCOPE, k.sessionId)),
        );
        expect(holders.map((h) => h?.rootKey)).toEqual(killed.map((k) => k.rootKey));
        const earliest = Math.min(...holders.map((h) => h?.deadlineAt ?? 0)) + 15 * 60_000;
        const later = Math.max(...holders.map((h) => h?.deadlineAt ?? 0)) + 15 * 60_000;
        const reports: UncertainTurnEvent[] = [];
        const clock = new ManualClock(earliest - 1);
        const maintenance = createConversationRunner({
          ...MAINTENANCE,
          stores: setup,
          clock,
          onUncertainTurn: (e) => reports.push(e),
        });
        const unresolved = await maintenance.listUnresolved(SCOPE, { limit: 100 });
        expect(new Set(unresolved.items.map((r) => r.rootKey))).toEqual(
          new Set(killed.map((k) => k.rootKey)),
        );
        expect(await maintenance.releaseExpired(SCOPE)).toEqual([]);
        clock.advance(later - clock.now());
        const released = await maintenance.releaseExpired(SCOPE);
        expect(new Set(released.map((r) => r.rootKey))).toEqual(
          new Set(killed.map((k) => k.rootKey)),
        );
        expect(reports.map((r) => [r.rootKey, r.cause, r.released]).sort()).toEqual(
          killed.map((k) => [k.rootKey, "expired", true]).sort(),
        );
        for (const k of killed)
          expect(await setup.admissions.holder(SCOPE, k.sessionId)).toBeUndefined();
        const fenced = await setup.execution.reconcileExpired({ scope: SCOPE, now: later });
        expect(fenced.map((r) => [r.rootKey, r.state]).sort()).toEqual(
          [
            [killed[0]?.rootKey, "fenced"],
            [killed[2]?.rootKey, "fenced"],
          ].sort(),
        );
        await setup.close();
      }, 120_000);
    },
  );
}
