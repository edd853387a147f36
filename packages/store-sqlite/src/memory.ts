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
import type { SqliteDb } from "./db.js";
import { truncateWal } from "./erasure.js";

/**
 * Memory in SQLite (schema version 8): `memory_episodes` and `memory_facts` hold the records (JSON,
 * version 1), each beside an FTS5 index (`*_fts`: contentless, so the index holds no copy of the
 * text, with `secure-delete` on, so a deleted record's terms leave the index pages). The index is
 * fed core's `memoryDocument` and queried with core's `memoryTerms` only, each term quoted: no
 * character of a query reaches FTS5's query syntax. Ranked by `bm25`, then newest first.
 */

const TABLES = {
  episode: { table: "memory_episodes", fts: "memory_episodes_fts", id: "episode_id" },
  fact: { table: "memory_facts", fts: "memory_facts_fts", id: "fact_id" },
} as const;

/** The FTS5 expression of a query's terms: each quoted (terms are letters and digits only), a prefix from 4 characters, OR'ed. */
export function ftsQuery(terms: readonly string[]): string {
  return terms.map((t) => (t.length >= MEMORY_PREFIX_MIN ? `"${t}"*` : `"${t}"`)).join(" OR ");
}

type Kind = keyof typeof TABLES;

/** The put of one record: refused for an erased source session; else insert, or read the stored one under its id and answer replayed or conflict; one immediate transaction. */
function put(
  db: SqliteDb,
  kind: Kind,
  key: string,
  record: Episode | ProfileFact,
): MemoryPutStatus {
  const { table, fts, id } = TABLES[kind];
  const recordId = "episodeId" in record ? record.episodeId : record.factId;
  return db.write(() => {
    // A session the store set erased is gone for good: nothing learned from it is written after (a late extraction).
    if (
      db
        .stmt("SELECT 1 FROM sessions WHERE scope = ? AND session_id = ? AND erased = 1")
        .get(key, db.mark(record.scope, record.source.sessionId))
    ) {
      throw new ErasedError("the record's source session");
    }
    const row = db
      .stmt(`SELECT record FROM ${table} WHERE scope = ? AND ${id} = ?`)
      .get(key, recordId) as { record: string } | undefined;
    if (row) {
      const stored =
        kind === "episode"
          ? episodeFromText(record.scope, row.record)
          : factFromText(record.scope, row.record);
      if (sameJson(stored, record)) return "replayed";
      throw new MemoryConflictError(kind);
    }
    const factKey = "key" in record ? record.key : null;
    const cols = kind === "fact" ? ", fact_key" : "";
    const info = db
      .stmt(
        `INSERT INTO ${table} (scope, ${id}, session_id, at, sensitivity, record${cols}) VALUES (?, ?, ?, ?, ?, ?${kind === "fact" ? ", ?" : ""})`,
      )
      .run(
        key,
        recordId,
        record.source.sessionId,
        record.source.at,
        sensitivityRank(record.sensitivity),
        memoryRecordText(record),
        ...(kind === "fact" ? [factKey] : []),
      );
    db.stmt(`INSERT INTO ${fts} (rowid, doc) VALUES (?, ?)`).run(
      info.lastInsertRowid,
      memoryDocument(record),
    );
    return "stored";
  });
}

/** Facts superseded by a newer fact of their key (by `at`, then fact id) are never searched. */
const CURRENT = `AND NOT EXISTS (SELECT 1 FROM memory_facts n WHERE n.scope = r.scope AND n.fact_key = r.fact_key
  AND (n.at > r.at OR (n.at = r.at AND n.fact_id > r.fact_id)))`;

function search(
  db: SqliteDb,
  kind: Kind,
  q: NormalizedMemorySearch,
): { record: string; score: number }[] {
  const { table, fts, id } = TABLES[kind];
  const current = kind === "fact" ? CURRENT : "";
  return db.guard(() => {
    if (q.terms.length === 0) {
      const rows = db
        .stmt(
          `SELECT record FROM ${table} r WHERE r.scope = ? AND r.sensitivity <= ? ${current} ORDER BY r.at DESC, r.${id} DESC LIMIT ?`,
        )
        .all(q.key, q.ceilingRank, q.limit) as { record: string }[];
      return rows.map((r) => ({ record: r.record, score: 0 }));
    }
    const rows = db
      .stmt(
        `SELECT r.record AS record, bm25(${fts}) AS rank FROM ${fts} JOIN ${table} r ON r.rid = ${fts}.rowid
         WHERE ${fts} MATCH ? AND r.scope = ? AND r.sensitivity <= ? ${current}
         ORDER BY rank, r.at DESC, r.${id} DESC LIMIT ?`,
      )
      .all(ftsQuery(q.terms), q.key, q.ceilingRank, q.limit) as { record: string; rank: number }[];
    return rows.map((r) => ({ record: r.record, score: -r.rank }));
  });
}

function list(
  db: SqliteDb,
  kind: Kind,
  scope: Scope,
  query: MemoryListQuery | undefined,
): { readonly items: readonly string[]; readonly more: boolean } {
  const { table, id } = TABLES[kind];
  const q = normalizeMemoryList(scope, query);
  const sessionId = q.sessionId ?? null;
  const before = q.before ?? null;
  const rows = db.guard(
    () =>
      db
        .stmt(
          `SELECT record FROM ${table} WHERE scope = ? AND (? IS NULL OR session_id = ?)
           AND (? IS NULL OR at < ? OR (at = ? AND ${id} < ?)) ORDER BY at DESC, ${id} DESC LIMIT ?`,
        )
        .all(
          q.key,
          sessionId,
          sessionId,
          before?.[0] ?? null,
          before?.[0] ?? null,
          before?.[0] ?? null,
          before?.[1] ?? null,
          q.limit + 1,
        ) as { record: string }[],
  );
  return { items: rows.slice(0, q.limit).map((r) => r.record), more: rows.length > q.limit };
}

function pageOfRecords<T extends Episode | ProfileFact>(
  read: { readonly items: readonly string[]; readonly more: boolean },
  decode: (text: string) => T,
): MemoryPage<T> {
  const items = Object.freeze(read.items.map(decode));
  const last = items[items.length - 1];
  return Object.freeze({
    items,
    ...(read.more && last !== undefined ? { nextCursor: memoryListCursor(last) } : {}),
  });
}

/**
 * A contentless-delete index deletes by tombstone: the deleted record's terms stay in the segment
 * pages until a merge rewrites them. `optimize` merges every segment into one now, so no page holds
 * an erased term (with `secure_delete`, the freed pages are zeroed). It rewrites the whole index:
 * erasure is rare, and this is its price.
 */
function purgeIndex(db: SqliteDb, fts: string): void {
  db.stmt(`INSERT INTO ${fts} (${fts}) VALUES ('optimize')`).run();
}

/**
 * The memory rows of one session (or, without one, of the whole scope) gone, index entries first;
 * inside the caller's transaction. Shared by `eraseMemory` and the store set's `SessionErasure`.
 */
export function eraseMemoryRows(
  db: SqliteDb,
  key: string,
  sessionId?: string,
): MemoryErasureReport {
  const count = (kind: Kind): number => {
    const { table, fts } = TABLES[kind];
    const where = `scope = ?${sessionId === undefined ? "" : " AND session_id = ?"}`;
    const args = sessionId === undefined ? [key] : [key, sessionId];
    db.stmt(`DELETE FROM ${fts} WHERE rowid IN (SELECT rid FROM ${table} WHERE ${where})`).run(
      ...args,
    );
    const n = db.stmt(`DELETE FROM ${table} WHERE ${where}`).run(...args).changes;
    if (n > 0) purgeIndex(db, fts);
    return n;
  };
  return Object.freeze({ episodes: count("episode"), facts: count("fact") });
}

export class SqliteEpisodeStore implements EpisodeStore {
  readonly #db: SqliteDb;
  constructor(db: SqliteDb) {
    this.#db = db;
  }
  async put(input: Episode): Promise<MemoryPutStatus> {
    const { episode, key } = normalizeEpisode(input);
    return put(this.#db, "episode", key, episode);
  }
  async search(scope: Scope, query: MemorySearch): Promise<readonly MemoryHit<Episode>[]> {
    const q = normalizeMemorySearch(scope, query);
    return Object.freeze(
      search(this.#db, "episode", q).map((h) =>
        Object.freeze({ record: episodeFromText(q.scope, h.record), score: h.score }),
      ),
    );
  }
  async list(scope: Scope, query?: MemoryListQuery): Promise<MemoryPage<Episode>> {
    const s = normalizeMemoryList(scope, query).scope;
    return pageOfRecords(list(this.#db, "episode", s, query), (text) => episodeFromText(s, text));
  }
}

export class SqliteProfileStore implements ProfileStore {
  readonly #db: SqliteDb;
  constructor(db: SqliteDb) {
    this.#db = db;
  }
  async put(input: ProfileFact): Promise<MemoryPutStatus> {
    const { fact, key } = normalizeProfileFact(input);
    return put(this.#db, "fact", key, fact);
  }
  async search(scope: Scope, query: MemorySearch): Promise<readonly MemoryHit<ProfileFact>[]> {
    const q = normalizeMemorySearch(scope, query);
    return Object.freeze(
      search(this.#db, "fact", q).map((h) =>
        Object.freeze({ record: factFromText(q.scope, h.record), score: h.score }),
      ),
    );
  }
  async list(scope: Scope, query?: MemoryListQuery): Promise<MemoryPage<ProfileFact>> {
    const s = normalizeMemoryList(scope, query).scope;
    return pageOfRecords(list(this.#db, "fact", s, query), (text) => factFromText(s, text));
  }
  async remove(scope: Scope, factId: string): Promise<boolean> {
    const ref = normalizeFactRef(scope, factId);
    const removed = this.#db.durable(() => {
      this.#db
        .stmt(
          "DELETE FROM memory_facts_fts WHERE rowid IN (SELECT rid FROM memory_facts WHERE scope = ? AND fact_id = ?)",
        )
        .run(ref.key, ref.factId);
      const n = this.#db
        .stmt("DELETE FROM memory_facts WHERE scope = ? AND fact_id = ?")
        .run(ref.key, ref.factId).changes;
      if (n > 0) purgeIndex(this.#db, "memory_facts_fts");
      return n;
    });
    truncateWal(this.#db);
    return removed > 0;
  }
}

/** The memory side of erasure alone: one durable transaction, then the WAL checkpointed and truncated. */
export class SqliteMemoryErasure implements MemoryErasure {
  readonly #db: SqliteDb;
  constructor(db: SqliteDb) {
    this.#db = db;
  }
  async eraseMemory(input: MemoryErasureTarget): Promise<MemoryErasureReport> {
    const target = normalizeMemoryTarget(input);
    const report = this.#db.durable(() => eraseMemoryRows(this.#db, target.key, target.sessionId));
    truncateWal(this.#db);
    return report;
  }
}
