import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ConversationStores } from "@alma-harness/conversation";
import { createPostgresStores } from "@alma-harness/store-postgres";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { describe, expect, it } from "vitest";
import { anthropicWire, WIRE_STEP_MICROS, WIRE_STEP_SCOPE } from "./anthropic-wire-kit.js";
import { runWorker } from "./process-kit.js";
import { scratch } from "./store-kit.js";

const URL_ = process.env.ALMA_TEST_DATABASE_URL;
const { dir, schemas } = scratch("alma-rt-steps");

/** What a host process printed: the completed call (or its replay), another status, or an error's code. */
interface Line {
  readonly pid: number;
  readonly status?: string;
  readonly replayed?: boolean;
  readonly object?: unknown;
  readonly usdMicros?: number;
  readonly error?: string;
}

type Target =
  | { readonly store: "postgres"; readonly schema: string; readonly rootSchema: string }
  | { readonly store: "sqlite"; readonly path: string };

/** Creates the shared database once (the processes then only open it) and returns how to read it back. */
async function prepare(
  store: "postgres" | "sqlite",
): Promise<{ target: Target; open: () => Promise<ConversationStores & { close(): unknown }> }> {
  if (store === "sqlite") {
    const path = join(dir, "alma.db");
    createSqliteStores({ path }).close();
    return { target: { store, path }, open: async () => createSqliteStores({ path }) };
  }
  const schema = `t_rt_steps_mp_${process.pid}_${Date.now().toString(36)}`;
  const rootSchema = `${schema}_root`;
  schemas.push(schema, rootSchema);
  await (
    await createPostgresStores({ connectionString: URL_, schema, rootSchema, migrate: true })
  ).close();
  return {
    target: { store, schema, rootSchema },
    open: () => createPostgresStores({ connectionString: URL_, schema, rootSchema }),
  };
}

const PROCESSES = 4;

/** Writes `go` once every process has written `ready-<pid>` (each composed its runtime); a process that fails first fails the wait. */
async function openBarrier(barrier: string, running: Promise<unknown>): Promise<void> {
  let failed: unknown;
  running.catch((error: unknown) => {
    failed = error;
  });
  while (readdirSync(barrier).filter((f) => f.startsWith("ready-")).length < PROCESSES) {
    if (failed !== undefined) throw failed;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  writeFileSync(join(barrier, "go"), "");
}
const cases = [
  { store: "sqlite" as const, skip: false },
  { store: "postgres" as const, skip: URL_ === undefined },
];

describe.each(cases)(
  "one single call under one key from $store host processes (separate Node OS processes, one database)",
  ({ store, skip }) => {
    it.skipIf(skip)(
      `${PROCESSES} processes at the same instant dispatch once; a later process's retry replays without dispatching`,
      async () => {
        // The provider holds its answer, so the others call while the first is in flight.
        const wire = await anthropicWire({ holdMs: 1000 });
        try {
          const { target, open } = await prepare(store);
          const spec = { ...target, url: wire.url, key: "k-proc" };
          const barrier = join(dir, `barrier-${store}`);
          mkdirSync(barrier);
          const running = Promise.all(
            Array.from({ length: PROCESSES }, () =>
              runWorker<Line>("step-worker.ts", { ...spec, barrier }),
            ),
          );
          await openBarrier(barrier, running);
          const lines = await running;
          expect(new Set(lines.map((l) => l.pid)).size).toBe(PROCESSES);
          expect(wire.bodies, "one provider dispatch across every process").toHaveLength(1);
          const completed = lines.filter((l) => l.status === "completed");
          const first = completed.find((l) => l.replayed === false);
          expect(
            completed.filter((l) => l.replayed === false),
            "one process dispatched; the others are in progress or replay",
          ).toHaveLength(1);
          for (const line of lines) {
            if (line.status === undefined) expect(line.error).toBe("step_call_in_progress");
            else
              expect(line).toMatchObject({
                status: "completed",
                object: first?.object,
                usdMicros: WIRE_STEP_MICROS,
              });
          }
          // Not vacuous: the processes raced (another one called while the first was in flight).
          expect(lines.filter((l) => l.error === "step_call_in_progress").length).toBeGreaterThan(
            0,
          );
          const retry = await runWorker<Line>("step-worker.ts", spec);
          expect(retry).toMatchObject({
            status: "completed",
            replayed: true,
            object: first?.object,
            usdMicros: WIRE_STEP_MICROS,
          });
          expect(wire.bodies, "the retry sends nothing").toHaveLength(1);
          const check = await open();
          try {
            const settlements = (await check.settlements.list(WIRE_STEP_SCOPE)).items;
            expect(
              settlements.map((s) => s.receipt.usdMicros),
              "one settlement, the receipt's",
            ).toEqual([WIRE_STEP_MICROS]);
            const spent = (await check.spend.tenantDays(WIRE_STEP_SCOPE.org)).reduce(
              (sum, d) => sum + d.usdMicros,
              0,
            );
            expect(spent, "spend equals the one receipt").toBe(WIRE_STEP_MICROS);
          } finally {
            await check.close();
          }
        } finally {
          await wire.close();
        }
      },
      60_000,
    );
  },
);
