import { FakeModelClient, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { postgres } from "@alma-harness/runtime";
import { createPostgresStores } from "@alma-harness/store-postgres";
import { describe, expect, it } from "vitest";
import {
  expectWholeTurn,
  openingHoursConfig as config,
  runToolTurn,
  seenFromOutside,
} from "./open.js";

const DATABASE_URL = process.env.ALMA_TEST_DATABASE_URL;

interface Counted {
  commitCount(): number;
  roundTripCount(): number;
}

describe.skipIf(!DATABASE_URL)(
  `the runner on PostgreSQL with grouped commits (the postgres() default)${DATABASE_URL ? "" : " (skipped: ALMA_TEST_DATABASE_URL is not set)"}`,
  () => {
    for (const [pure, most] of [
      [false, 4],
      [true, 3],
    ] as const)
      it(`a tool turn ${pure ? "with a pure tool " : ""}takes at most ${most} commits, what the handler may depend on is committed before it runs${pure ? " (nothing of its step)" : ""}, and all of it when the turn returns`, async () => {
        const suffix = `${process.pid}_${Date.now().toString(36)}_${pure ? "p" : "e"}`;
        const names = { schema: `rt_grouped_${suffix}`, rootSchema: `rt_grouped_root_${suffix}` };
        const seenByHandler: string[] = [];
        const model = new FakeModelClient([
          scriptedToolCall({ id: "c1", name: "opening_hours", input: {} }),
          scriptedText("9 to 5."),
        ]);
        let outside: Awaited<ReturnType<typeof createPostgresStores>> | undefined;
        const rt = await postgres({
          ...config(
            model,
            async () => {
              // Another store set (another process) sees only what is committed.
              seenByHandler.push(
                ...(await seenFromOutside(outside as NonNullable<typeof outside>)),
              );
              return { open: "09:00-17:00" };
            },
            pure,
          ),
          store: { connectionString: DATABASE_URL, ...names, migrate: true },
        });
        outside = await createPostgresStores({ connectionString: DATABASE_URL, ...names });
        try {
          const stores = rt.stores as unknown as Counted;
          const [commits, trips] = [stores.commitCount(), stores.roundTripCount()];
          await runToolTurn(rt);
          const perTurn = {
            commits: stores.commitCount() - commits,
            roundTrips: stores.roundTripCount() - trips,
          };
          console.info(
            `postgres grouped tool turn${pure ? " (pure tool)" : ""}: ${perTurn.commits} commits, ${perTurn.roundTrips} round trips`,
          );
          expect(perTurn.commits).toBeLessThanOrEqual(most);
          await expectWholeTurn(outside, seenByHandler, pure);
        } finally {
          await rt.close();
          await outside.close();
        }
      });

    it('store: { commits: "each" } keeps one transaction per write', async () => {
      const suffix = `${process.pid}_${Date.now().toString(36)}_each`;
      const model = new FakeModelClient([
        scriptedToolCall({ id: "c1", name: "opening_hours", input: {} }),
        scriptedText("9 to 5."),
      ]);
      const rt = await postgres({
        ...config(model, async () => ({ open: "09:00-17:00" })),
        store: {
          connectionString: DATABASE_URL,
          schema: `rt_each_${suffix}`,
          rootSchema: `rt_each_root_${suffix}`,
          migrate: true,
          commits: "each",
        },
      });
      try {
        const stores = rt.stores as unknown as Counted & { unit?: unknown };
        expect(stores.unit).toBeUndefined();
        const [commits, trips] = [stores.commitCount(), stores.roundTripCount()];
        await runToolTurn(rt);
        console.info(
          `postgres each tool turn: ${stores.commitCount() - commits} commits, ${stores.roundTripCount() - trips} round trips`,
        );
        expect(stores.commitCount() - commits).toBeGreaterThan(5);
      } finally {
        await rt.close();
      }
    });
  },
);
