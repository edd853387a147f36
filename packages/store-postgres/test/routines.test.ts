import { routineClaimOf, routineOf, routineStoreContract } from "@alma-harness/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createPostgresStores } from "../src/index.js";
import { DATABASE_URL, SKIP_REASON, schemaFactory } from "./support.js";

const schemas = schemaFactory("routines");
afterAll(() => schemas.dropAll());
const skip = DATABASE_URL ? "" : ` (${SKIP_REASON})`;

describe.skipIf(!DATABASE_URL)(`postgres routine stores${skip}`, () => {
  routineStoreContract(
    "postgres",
    () =>
      createPostgresStores({
        connectionString: DATABASE_URL,
        ...schemas.next(),
        migrate: true,
        pool: { max: 6 },
      }),
    { describe, it, expect },
  );
  routineStoreContract(
    "postgres grouped",
    () =>
      createPostgresStores({
        connectionString: DATABASE_URL,
        ...schemas.next(),
        migrate: true,
        commits: "grouped",
        pool: { max: 6 },
      }),
    { describe, it, expect },
  );

  it("two store sets on two pools (as two host processes) claiming the same slots: one run per slot", async () => {
    const names = schemas.next();
    const one = await createPostgresStores({
      connectionString: DATABASE_URL,
      ...names,
      migrate: true,
      pool: { max: 4 },
    });
    const two = await createPostgresStores({
      connectionString: DATABASE_URL,
      ...names,
      pool: { max: 4 },
    });
    try {
      await one.routines.put(routineOf("r1"));
      const slots = [0, 1, 2, 3, 4, 5].map((i) => Date.UTC(2026, 0, 2 + i, 1));
      const claims = slots.flatMap((slot) =>
        [one, two, one, two].map((s, i) =>
          s.routineRuns.claim(
            routineClaimOf(`host-${i % 2}-${i}`, { slot, sessionId: `s-${slot}` }),
          ),
        ),
      );
      const results = await Promise.all(claims);
      for (const slot of slots) {
        const mine = results.filter((r) => r.run.slot === slot);
        expect(
          mine.filter((r) => r.status === "claimed"),
          `slot ${slot}: one claim wins`,
        ).toHaveLength(1);
        const owner = mine.find((r) => r.status === "claimed")?.run.owner;
        for (const r of mine) expect(r.run.owner).toBe(owner);
      }
      expect(
        (await two.routineRuns.list({ org: "org-a", uid: "user-1" }, { limit: 100 })).items,
      ).toHaveLength(slots.length);
    } finally {
      await one.close();
      await two.close();
    }
  });
});
