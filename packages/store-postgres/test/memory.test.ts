import { memoryContract } from "@alma-harness/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createPostgresStores } from "../src/index.js";
import { tsQuery } from "../src/memory.js";
import { DATABASE_URL, SKIP_REASON, schemaFactory } from "./support.js";

const schemas = schemaFactory("memory");
afterAll(() => schemas.dropAll());

describe("postgres memory: the tsquery of a query", () => {
  it("is the query's terms OR'ed (a prefix from 4 characters): no operator reaches to_tsquery", () => {
    expect(tsQuery(["pen", "penicillin", "near", "or"])).toBe("pen | penicillin:* | near:* | or");
  });
});

describe.skipIf(!DATABASE_URL)(`postgres memory${DATABASE_URL ? "" : ` (${SKIP_REASON})`}`, () => {
  for (const commits of ["each", "grouped"] as const) {
    memoryContract(
      `postgres ${commits}`,
      async () => {
        const s = await createPostgresStores({
          connectionString: DATABASE_URL,
          ...schemas.next(),
          migrate: true,
          commits,
          pool: { max: 4 },
        });
        return {
          episodes: s.episodes,
          profiles: s.profiles,
          erasure: s.memoryErasure,
          close: () => s.close(),
        };
      },
      { describe, it, expect },
    );
  }
});
