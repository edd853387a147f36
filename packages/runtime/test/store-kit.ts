import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPostgresStores } from "@alma-harness/store-postgres";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { memoryStores, type RuntimeStores } from "@alma-harness/runtime";
import pg from "pg";
import { afterAll } from "vitest";

export const DATABASE_URL = process.env.ALMA_TEST_DATABASE_URL;

export interface OpenedStores {
  readonly stores: RuntimeStores;
  close(): Promise<void>;
}

let schemas = 0;

/**
 * A fresh store set of one kind, as the runtime composes it (SQLite and PostgreSQL with grouped
 * commits), built here so a test can wrap it before the runner sees it.
 */
export async function openStores(
  kind: "memory" | "sqlite" | "postgres",
  prefix: string,
): Promise<OpenedStores> {
  if (kind === "memory") return { stores: memoryStores(), close: async () => undefined };
  if (kind === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), `alma-${prefix}-`));
    const stores = createSqliteStores({ path: join(dir, "alma.db"), commits: "grouped" });
    return {
      stores,
      close: async () => {
        stores.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  schemas += 1;
  const suffix = `${process.pid}_${schemas}`;
  const stores = await createPostgresStores({
    connectionString: DATABASE_URL,
    schema: `${prefix}_${suffix}`,
    rootSchema: `${prefix}_root_${suffix}`,
    migrate: true,
    commits: "grouped",
  });
  return { stores, close: () => stores.close() };
}

export const KINDS = [
  ["memory", true],
  ["sqlite", true],
  ["postgres", DATABASE_URL !== undefined],
] as const;

/**
 * A test file's scratch space: a temporary directory, and a list of PostgreSQL schemas the file
 * pushes what it creates to; both are removed after the file's tests.
 */
export function scratch(prefix: string): { readonly dir: string; readonly schemas: string[] } {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  const created: string[] = [];
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    if (DATABASE_URL && created.length > 0) {
      const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
      await pool.query(`DROP SCHEMA IF EXISTS ${created.join(", ")} CASCADE`);
      await pool.end();
    }
  });
  return { dir, schemas: created };
}
