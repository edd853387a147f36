import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { governedWritesContract, storeContracts } from "@alma-harness/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteStores } from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "alma-sqlite-contracts-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

const fresh = () => {
  n += 1;
  return createSqliteStores({ path: join(dir, `db-${n}`, "alma.db"), synchronous: "normal" });
};

storeContracts("sqlite", fresh, { describe, it, expect });
governedWritesContract("sqlite", fresh, { describe, it, expect });

// Root results in the attached file (existing databases, or `rootResults: "attached"`) pass the same suites.
const attached = () => {
  n += 1;
  return createSqliteStores({
    path: join(dir, `db-${n}`, "alma.db"),
    synchronous: "normal",
    rootResults: "attached",
  });
};
storeContracts("sqlite attached", attached, { describe, it, expect });
governedWritesContract("sqlite attached", attached, { describe, it, expect });
