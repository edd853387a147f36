import { governedWritesContract } from "@alma-harness/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createPostgresStores } from "../src/index.js";
import { DATABASE_URL, SKIP_REASON, schemaFactory } from "./support.js";

const schemas = schemaFactory("governed");
afterAll(() => schemas.dropAll(), 120_000);

// One store set per test (fresh schemas): the admissions, the journal that claims and reserves,
// the root results a fenced put writes, and the settlements and spend that release and count.
describe.skipIf(!DATABASE_URL)(
  `postgres governed writes${DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    governedWritesContract(
      "postgres",
      async () => {
        const stores = await createPostgresStores({
          connectionString: DATABASE_URL,
          ...schemas.next(),
          migrate: true,
          pool: { max: 8 },
        });
        const { admissions, execution, rootResults, settlements, spend, close } = stores;
        return { admissions, execution, rootResults, settlements, spend, close };
      },
      { describe, it, expect },
    );
  },
);
