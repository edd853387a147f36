import { readFileSync } from "node:fs";
import { MEMORY_STATE } from "@alma-harness/core/memory";

/** Where a stored value holds a needle: a table and column (SQL), a path of property names (memory) or a file. */
export interface ScanHit {
  readonly where: string;
  readonly needle: string;
}

/** The slice of a SQLite connection the scan uses (better-sqlite3's `Database` satisfies it). */
export interface SqliteReader {
  prepare(sql: string): { all(...params: unknown[]): unknown[] };
}

/** The slice of a PostgreSQL client or pool the scan uses (`pg`'s `Pool` satisfies it). */
export interface PgReader {
  query(
    text: string,
    values?: unknown[],
  ): Promise<{ readonly rows: readonly Record<string, unknown>[] }>;
}

function hitsIn(text: string, where: string, needles: readonly string[], out: ScanHit[]): void {
  for (const needle of needles) if (text.includes(needle)) out.push({ where, needle });
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Every table of every schema of a SQLite connection (`sqlite_master`, `pragma table_info`), every
 * column of every row read as text: one hit per value holding a needle. Nothing is named in advance,
 * so a table added later is scanned too.
 */
export function scanSqlite(
  db: SqliteReader,
  needles: readonly string[],
  schemas: readonly string[] = ["main"],
): ScanHit[] {
  const out: ScanHit[] = [];
  for (const schema of schemas) {
    const tables = db
      .prepare(`SELECT name FROM ${quote(schema)}.sqlite_master WHERE type = 'table'`)
      .all() as { name: string }[];
    for (const { name } of tables) {
      const columns = db.prepare(`SELECT name FROM pragma_table_info(?, ?)`).all(name, schema) as {
        name: string;
      }[];
      for (const column of columns) {
        const rows = db
          .prepare(
            `SELECT CAST(${quote(column.name)} AS TEXT) AS v FROM ${quote(schema)}.${quote(name)}`,
          )
          .all() as { v: string | null }[];
        for (const row of rows)
          if (row.v !== null) hitsIn(row.v, `${schema}.${name}.${column.name}`, needles, out);
      }
    }
  }
  return out;
}

/** Every column (`information_schema.columns`) of every table of `schemas`, every row read as text. */
export async function scanPostgres(
  db: PgReader,
  schemas: readonly string[],
  needles: readonly string[],
): Promise<ScanHit[]> {
  const out: ScanHit[] = [];
  const { rows: columns } = await db.query(
    `SELECT c.table_schema, c.table_name, c.column_name FROM information_schema.columns c
     JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
     WHERE c.table_schema = ANY($1::text[]) ORDER BY 1, 2, 3`,
    [[...schemas]],
  );
  for (const c of columns as { table_schema: string; table_name: string; column_name: string }[]) {
    const { rows } = await db.query(
      `SELECT ${quote(c.column_name)}::text AS v FROM ${quote(c.table_schema)}.${quote(c.table_name)}`,
    );
    for (const row of rows)
      if (typeof row.v === "string")
        hitsIn(row.v, `${c.table_schema}.${c.table_name}.${c.column_name}`, needles, out);
  }
  return out;
}

/**
 * A deep walk of everything `root` holds: strings, numbers, the keys and values of maps, sets,
 * arrays and objects, and a store's own state through its read-only `MEMORY_STATE` view (private
 * fields are out of reach otherwise). `where` is the path with indices and map keys left out, so
 * two scans of the same stores compare as multisets.
 */
export function scanValue(root: unknown, needles: readonly string[], where = "$"): ScanHit[] {
  const out: ScanHit[] = [];
  const seen = new Set<object>();
  const walk = (value: unknown, path: string): void => {
    if (typeof value === "string" || typeof value === "number" || typeof value === "bigint") {
      hitsIn(String(value), path, needles, out);
      return;
    }
    if (value === null || (typeof value !== "object" && typeof value !== "function")) return;
    if (seen.has(value)) return;
    seen.add(value);
    const state = (value as { [MEMORY_STATE]?: () => unknown })[MEMORY_STATE];
    if (typeof state === "function") walk(state.call(value), `${path}.state`);
    if (value instanceof Map) {
      for (const [k, v] of value) {
        walk(k, `${path}<key>`);
        walk(v, `${path}<value>`);
      }
      return;
    }
    if (value instanceof Set || Array.isArray(value)) {
      for (const v of value) walk(v, `${path}[]`);
      return;
    }
    if (typeof value === "function") return;
    for (const [k, v] of Object.entries(value)) {
      hitsIn(k, `${path}<key>`, needles, out);
      walk(v, `${path}.${k}`);
    }
  };
  walk(root, where);
  return out;
}

/** The raw bytes of each file (absent files are skipped), searched for each needle as UTF-8. */
export function scanFiles(paths: readonly string[], needles: readonly string[]): ScanHit[] {
  const out: ScanHit[] = [];
  for (const path of paths) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch {
      continue;
    }
    for (const needle of needles)
      if (bytes.includes(Buffer.from(needle, "utf8"))) out.push({ where: path, needle });
  }
  return out;
}
