import { governedWritesContract, storeContracts } from "@alma-harness/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createPostgresStores } from "../src/index.js";
import { schemaFactory } from "./support.js";
import { unitPerCall } from "./units.js";

/**
 * The contract suites through a real PgBouncer in transaction pooling mode (issue 26), started by
 * scripts/pgbouncer-up.sh in front of the test cluster: a transaction may land on any server
 * connection, so no store may keep state in a session (a session advisory lock, a `SET` without
 * `LOCAL`, a named prepared statement, a `search_path` startup option). The pooler's server
 * connections start with `search_path = pg_catalog`: a statement that does not name its schema
 * fails here.
 */
const BOUNCER_URL = process.env.ALMA_TEST_PGBOUNCER_URL;
const skip = BOUNCER_URL
  ? ""
  : " (skipped: set ALMA_TEST_PGBOUNCER_URL, see scripts/pgbouncer-up.sh)";

const schemas = schemaFactory("pgbouncer");
afterAll(() => schemas.dropAll(), 120_000);

const open = (commits: "each" | "grouped") =>
  createPostgresStores({
    connectionString: BOUNCER_URL,
    ...schemas.next(),
    migrate: true,
    pool: { max: 6 },
    commits,
  });

describe.skipIf(!BOUNCER_URL)(`postgres behind PgBouncer (transaction pooling)${skip}`, () => {
  storeContracts("pgbouncer", () => open("each"), { describe, it, expect });
  const grouped = async () => unitPerCall(await open("grouped"));
  storeContracts("pgbouncer grouped (a unit per call)", grouped, { describe, it, expect });
  governedWritesContract("pgbouncer grouped (a unit per call)", grouped, { describe, it, expect });
});
