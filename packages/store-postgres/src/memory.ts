import {
  type Episode,
  type EpisodeStore,
  episodeFromText,
  ErasedError,
  factFromText,
  MEMORY_PREFIX_MIN,
  MemoryConflictError,
  type MemoryErasure,
  type MemoryErasureReport,
  type MemoryErasureTarget,
  type MemoryHit,
  type MemoryListQuery,
  type MemoryPage,
  type MemoryPutStatus,
  type MemorySearch,
  memoryDocument,
  memoryListCursor,
  memoryRecordText,
  type NormalizedMemorySearch,
  normalizeEpisode,
  normalizeFactRef,
  normalizeMemoryList,
  normalizeMemorySearch,
  normalizeMemoryTarget,
  normalizeProfileFact,
  type ProfileFact,
  type ProfileStore,
  type Scope,
  sensitivityRank,
} from "@alma-harness/core";
import { sameJson } from "@alma-harness/core/stores";
import type pg from "pg";
import { asConn, type Conn } from "./conn.js";
import { lockLabelScope } from "./erasure.js";
import type { Queryable } from "./pg.js";

/**
 * Memory in PostgreSQL (migration 0009): `memory_episodes` and `memory_facts`, each row the
 * record's JSON beside `doc`, a `tsvector` (configuration `simple`) of core's `memoryDocument`,
 * under a GIN index. A search is `doc @@ to_tsquery('simple', …)` over core's `memoryTerms` only
 * (letters and digits, so no character of a query is tsquery syntax), ranked by `ts_rank`, then
 * newest first.
 */

const TABLES = {
  episode: { table: "memory_episodes", id: "episode_id" },
  fact: { table: "memory_facts", id: "fact_id" },
} as const;
type Kind = keyof typeof TABLES;

/** The tsquery text of a query's terms: OR'ed, a prefix (`:*`) from 4 characters. */
export function tsQuery(terms: readonly string[]): string {
  return terms.map((t) => (t.length >= MEMORY_PREFIX_MIN ? `${t}:*` : t)).join(" | ");
}

const CURRENT = `AND NOT EXISTS (SELECT 1 FROM memory_facts n WHERE n.scope = r.scope AND n.fact_key = r.fact_key
  AND (n.at > r.at OR (n.at = r.at AND n.fact_id > r.fact_id)))`;

/**
 * The put of one record, one transaction under the scope's erasure lock (the one `PgErasure` takes,
 * so a put and an erasure of the scope never interleave): refused for a session the store set
 * erased (its tombstone in `sessions`); else insert-or-nothing, then the stored row compared.
 */
async function put(
  db: Conn,
  kind: Kind,
  key: string,
  record: Episode | ProfileFact,
): Promise<MemoryPutStatus> {
  const { table, id } = TABLES[kind];
  const recordId = "episodeId" in record ? record.episodeId : record.factId;
  const fact = kind === "fact" && "key" in record;
  const values = [
    key,
    recordId,
    record.source.sessionId,
    record.source.at,
    sensitivityRank(record.sensitivity),
    memoryRecordText(record),
    memoryDocument(record),
    ...(fact ? [record.key] : []),
  ];
  return db.transaction(async (tx) => {
    await lockLabelScope(tx, key);
    const erased = await tx.query(
      "SELECT 1 FROM sessions WHERE scope = $1 AND session_id = $2 AND erased",
      [key, db.mark(record.scope, record.source.sessionId)],
    );
    if (erased.rows.length > 0) throw new ErasedError("the record's source session");
    const { rows } = await tx.query<{ n: number }>(
      `INSERT INTO ${table} (scope, ${id}, session_id, at, sensitivity, record, doc${fact ? ", fact_key" : ""})
       VALUES ($1, $2, $3, $4, $5, $6, to_tsvector('pg_catalog.simple', $7)${fact ? ", $8" : ""})
       ON CONFLICT (scope, ${id}) DO NOTHING RETURNING 1 AS n`,
      values,
    );
    if (rows.length === 1) return "stored" as const;
    // Under the scope's lock the row that won is committed and stays while this transaction runs.
    const found = await tx.query<{ record: string }>(
      `SELECT record FROM ${table} WHERE scope = $1 AND ${id} = $2`,
      [key, recordId],
    );
    const text = found.rows[0]?.record;
    if (text === undefined) throw new MemoryConflictError(kind);
    const stored =
      kind === "episode" ? episodeFromText(record.scope, text) : factFromText(record.scope, text);
    if (sameJson(stored, record)) return "replayed" as const;
    throw new MemoryConflictError(kind);
  });
}

async function search(
  db: Conn,
  kind: Kind,
  q: NormalizedMemorySearch,
): Promise<{ record: string; score: number }[]> {
  const { table, id } = TABLES[kind];
  const current = kind === "fact" ? CURRENT : "";
  if (q.terms.length === 0) {
    const { rows } = await db.query<{ record: string }>(
      `SELECT record FROM ${table} r WHERE r.scope = $1 AND r.sensitivity <= $2 ${current} ORDER BY r.at DESC, r.${id} DESC LIMIT $3`,
      [q.key, q.ceilingRank, q.limit],
    );
    return rows.map((r) => ({ record: r.record, score: 0 }));
  }
  const { rows } = await db.query<{ record: string; rank: number }>(
    `SELECT r.record, ts_rank(r.doc, q) AS rank FROM ${table} r, to_tsquery('pg_catalog.simple', $2) q
     WHERE r.scope = $1 AND r.sensitivity <= $3 AND r.doc @@ q ${current}
     ORDER BY rank DESC, r.at DESC, r.${id} DESC LIMIT $4`,
    [q.key, tsQuery(q.terms), q.ceilingRank, q.limit],
  );
  return rows.map((r) => ({ record: r.record, score: Number(r.rank) }));
}

async function list<T extends Episode | ProfileFact>(
  db: Conn,
  kind: Kind,
  scope: Scope,
  query: MemoryListQuery | undefined,
  decode: (s: Scope, text: string) => T,
): Promise<MemoryPage<T>> {
  const { table, id } = TABLES[kind];
  const q = normalizeMemoryList(scope, query);
  const { rows } = await db.query<{ record: string }>(
    `SELECT record FROM ${table} WHERE scope = $1 AND ($2::text IS NULL OR session_id = $2)
     AND ($3::bigint IS NULL OR at < $3 OR (at = $3 AND ${id} < $4)) ORDER BY at DESC, ${id} DESC LIMIT $5`,
    [q.key, q.sessionId ?? null, q.before?.[0] ?? null, q.before?.[1] ?? null, q.limit + 1],
  );
  const items = Object.freeze(rows.slice(0, q.limit).map((r) => decode(q.scope, r.record)));
  const last = items[items.length - 1];
  return Object.freeze({
    items,
    ...(rows.length > q.limit && last !== undefined ? { nextCursor: memoryListCursor(last) } : {}),
  });
}

/** The memory rows of one session (or, without one, of the whole scope) gone, in the caller's transaction. Shared with the store set's `SessionErasure`. */
export async function eraseMemoryRows(
  tx: Queryable,
  key: string,
  sessionId?: string,
): Promise<MemoryErasureReport> {
  const where = sessionId === undefined ? "scope = $1" : "scope = $1 AND session_id = $2";
  const args = sessionId === undefined ? [key] : [key, sessionId];
  const episodes = await tx.query(`DELETE FROM memory_episodes WHERE ${where}`, args);
  const facts = await tx.query(`DELETE FROM memory_facts WHERE ${where}`, args);
  return Object.freeze({ episodes: episodes.rowCount ?? 0, facts: facts.rowCount ?? 0 });
}

export class PgEpisodeStore implements EpisodeStore {
  readonly #db: Conn;
  constructor(pool: pg.Pool | Conn) {
    this.#db = asConn(pool);
  }
  async put(input: Episode): Promise<MemoryPutStatus> {
    const { episode, key } = normalizeEpisode(input);
    return put(this.#db, "episode", key, episode);
  }
  async search(scope: Scope, query: MemorySearch): Promise<readonly MemoryHit<Episode>[]> {
    const q = normalizeMemorySearch(scope, query);
    return Object.freeze(
      (await search(this.#db, "episode", q)).map((h) =>
        Object.freeze({ record: episodeFromText(q.scope, h.record), score: h.score }),
      ),
    );
  }
  list(scope: Scope, query?: MemoryListQuery): Promise<MemoryPage<Episode>> {
    return list(this.#db, "episode", scope, query, episodeFromText);
  }
}

export class PgProfileStore implements ProfileStore {
  readonly #db: Conn;
  constructor(pool: pg.Pool | Conn) {
    this.#db = asConn(pool);
  }
  async put(input: ProfileFact): Promise<MemoryPutStatus> {
    const { fact, key } = normalizeProfileFact(input);
    return put(this.#db, "fact", key, fact);
  }
  async search(scope: Scope, query: MemorySearch): Promise<readonly MemoryHit<ProfileFact>[]> {
    const q = normalizeMemorySearch(scope, query);
    return Object.freeze(
      (await search(this.#db, "fact", q)).map((h) =>
        Object.freeze({ record: factFromText(q.scope, h.record), score: h.score }),
      ),
    );
  }
  list(scope: Scope, query?: MemoryListQuery): Promise<MemoryPage<ProfileFact>> {
    return list(this.#db, "fact", scope, query, factFromText);
  }
  async remove(scope: Scope, factId: string): Promise<boolean> {
    const ref = normalizeFactRef(scope, factId);
    const { rows } = await this.#db.write<{ n: number }>(
      "DELETE FROM memory_facts WHERE scope = $1 AND fact_id = $2 RETURNING 1 AS n",
      [ref.key, ref.factId],
      { durable: true },
    );
    return rows.length > 0;
  }
}

/** The memory side of erasure alone: one transaction, a durability point. */
export class PgMemoryErasure implements MemoryErasure {
  readonly #db: Conn;
  constructor(pool: pg.Pool | Conn) {
    this.#db = asConn(pool);
  }
  async eraseMemory(input: MemoryErasureTarget): Promise<MemoryErasureReport> {
    const target = normalizeMemoryTarget(input);
    return this.#db.transaction((tx) => eraseMemoryRows(tx, target.key, target.sessionId), {
      durable: true,
    });
  }
}
