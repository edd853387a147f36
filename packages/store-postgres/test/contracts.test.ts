import { storeContracts } from "@alma-harness/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createPostgresStores } from "../src/index.js";
import { DATABASE_URL, SKIP_REASON, schemaFactory } from "./support.js";

const schemas = schemaFactory("contracts");
// Dropping every schema of the suite (each with every table) takes a while on a loaded machine.
afterAll(() => schemas.dropAll(), 120_000);

describe.skipIf(!DATABASE_URL)(
  `postgres contract suites${DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    storeContracts(
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
  },
);
