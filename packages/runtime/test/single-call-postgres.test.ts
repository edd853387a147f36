import { createPostgresStores } from "@alma-harness/store-postgres";
import { FakeModelClient, scriptedText } from "@alma-harness/loop/testing";
import { StepCallInProgressError } from "@alma-harness/single-call";
import { describe, expect, it } from "vitest";
import { stepRunner, triage } from "./single-call-kit.js";
import { DATABASE_URL } from "./store-kit.js";

describe("one key from two store sets on one PostgreSQL database (two pools, as two host processes)", () => {
  it.skipIf(DATABASE_URL === undefined)(
    "dispatches once; every other caller is in progress or replays",
    async () => {
      const suffix = `${process.pid}_two`;
      const names = {
        connectionString: DATABASE_URL,
        schema: `single_two_${suffix}`,
        rootSchema: `single_two_root_${suffix}`,
        commits: "grouped" as const,
      };
      const a = await createPostgresStores({ ...names, migrate: true });
      const b = await createPostgresStores({ ...names, migrate: false });
      try {
        const clientA = new FakeModelClient([scriptedText('{"category":"other","urgency":1}')]);
        const clientB = new FakeModelClient([scriptedText('{"category":"other","urgency":1}')]);
        const scope = { org: "two-pools", uid: "desk" };
        const runners = [stepRunner(a, clientA), stepRunner(b, clientB)];
        const settled = await Promise.allSettled(
          Array.from({ length: 8 }, (_, i) =>
            (runners[i % 2] as (typeof runners)[number]).run(triage(scope, "k1")),
          ),
        );
        expect(clientA.calls + clientB.calls).toBe(1);
        for (const s of settled) {
          if (s.status === "rejected") expect(s.reason).toBeInstanceOf(StepCallInProgressError);
          else expect(s.value.status).toBe("completed");
        }
        const replay = await (runners[1] as (typeof runners)[number]).run(triage(scope, "k1"));
        expect(replay).toMatchObject({ status: "completed", replayed: true });
        expect(clientA.calls + clientB.calls).toBe(1);
      } finally {
        await a.close();
        await b.close();
      }
    },
  );
});
