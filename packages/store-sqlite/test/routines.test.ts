import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { routineStoreContract } from "@alma-harness/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteStores } from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "alma-sqlite-routines-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = (commits: "each" | "grouped") => () => {
  n += 1;
  return createSqliteStores({
    path: join(dir, `db-${n}`, "alma.db"),
    synchronous: "normal",
    commits,
  });
};

routineStoreContract("sqlite", fresh("each"), { describe, it, expect });
routineStoreContract("sqlite grouped", fresh("grouped"), { describe, it, expect });
