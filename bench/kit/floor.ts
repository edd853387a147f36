// The plain-INSERT floor: transactions of single-row INSERTs and nothing else, on the same kind of
// database as the store, with the store's durability settings. A floor "turn" is as many of these
// transactions as the store's turn commits.
import { createRequire } from "node:module";
import type pg from "pg";

const require = createRequire(import.meta.url);
const Database = require("better-sqlite3") as typeof import("better-sqlite3");

const BODY = "x".repeat(200);

/** A SQLite floor file (WAL, synchronous FULL, the stores' busy timeout); `tx(n)`: one transaction of `n` INSERTs. */
export function sqliteFloor(
  path: string,
  walAutoCheckpoint?: number,
): { readonly tx: (inserts: number) => void; readonly close: () => void } {
  const db = new Database(path);
  db.pragma("busy_timeout = 5000");
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  if (walAutoCheckpoint !== undefined) db.pragma(`wal_autocheckpoint = ${walAutoCheckpoint}`);
  db.exec("create table if not exists floor (id integer primary key, body text)");
  const insert = db.prepare("insert into floor (body) values (?)");
  const tx = db.transaction((n: number) => {
    for (let i = 0; i < n; i++) insert.run(BODY);
  });
  return { tx: (n) => tx.immediate(n), close: () => db.close() };
}

/** Creates the PostgreSQL floor table `table` (a qualified name) when absent. */
export async function pgFloorTable(pool: pg.Pool, table: string): Promise<void> {
  await pool.query(`create table if not exists ${table} (id bigserial primary key, body text)`);
}

/** One PostgreSQL floor transaction: BEGIN, `inserts` single-row INSERTs, COMMIT, on one pooled client. */
export async function pgFloorTx(pool: pg.Pool, table: string, inserts: number): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    for (let i = 0; i < inserts; i++)
      await client.query(`insert into ${table} (body) values ($1)`, [BODY]);
    await client.query("COMMIT");
  } finally {
    client.release();
  }
}
