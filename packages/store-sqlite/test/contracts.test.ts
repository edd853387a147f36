import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { storeContracts } from "@alma-harness/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteStores } from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "alma-sqlite-contracts-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

storeContracts(
  "sqlite",
  () => {
    n += 1;
    return createSqliteStores({ path: join(dir, `db-${n}`, "alma.db"), synchronous: "normal" });
  },
  { describe, it, expect },
);
