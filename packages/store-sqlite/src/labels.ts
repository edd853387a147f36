import {
  canonicalJson,
  normalizeSessionLabels,
  type Scope,
  SessionLabelConflictError,
  SessionLabelErasedError,
  type SessionLabels,
  type SessionLabelStore,
  validateId,
} from "@alma-harness/core";
import { labelsFromText, scopeKey } from "@alma-harness/core/stores";
import type { SqliteDb } from "./db.js";
import { eraseLabelRows } from "./erasure.js";

interface LabelRow {
  readonly labels: string | null;
  readonly erased: number;
}

/** Session labels in SQLite. Tombstones and scope seals are rows, so erasure outlives any later write. */
export class SqliteSessionLabelStore implements SessionLabelStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async put(scope: Scope, sessionId: string, labels: SessionLabels): Promise<SessionLabels> {
    const { key } = scopeKey(scope);
    const id = validateId("sessionId", sessionId);
    const normalized = normalizeSessionLabels(labels);
    const text = canonicalJson(normalized);
    return this.#db.write(() => {
      if (this.#db.stmt("SELECT 1 FROM sealed_label_scopes WHERE scope = ?").get(key))
        throw new SessionLabelErasedError();
      const byId = this.#db.stmt(
        "SELECT labels, erased FROM session_labels WHERE scope = ? AND session_id = ?",
      );
      const row = byId.get(key, id) as LabelRow | undefined;
      if (
        row ? row.erased : (byId.get(key, this.#db.mark(scope, id)) as LabelRow | undefined)?.erased
      )
        throw new SessionLabelErasedError();
      if (row) {
        if (row.labels === text) return normalized;
        throw new SessionLabelConflictError();
      }
      this.#db
        .stmt("INSERT INTO session_labels (scope, session_id, labels) VALUES (?, ?, ?)")
        .run(key, id, text);
      return normalized;
    });
  }

  async get(scope: Scope, sessionId: string): Promise<SessionLabels | undefined> {
    const { key } = scopeKey(scope);
    const id = validateId("sessionId", sessionId);
    const row = this.#db.guard(
      () =>
        this.#db
          .stmt(
            `SELECT l.labels, l.erased FROM session_labels l
             WHERE l.scope = ? AND l.session_id = ? AND NOT EXISTS (SELECT 1 FROM sealed_label_scopes s WHERE s.scope = l.scope)`,
          )
          .get(key, id) as LabelRow | undefined,
    );
    if (!row || row.erased || row.labels === null) return undefined;
    return labelsFromText(row.labels);
  }

  async erase(scope: Scope, sessionId?: string): Promise<void> {
    const { key } = scopeKey(scope);
    if (sessionId === undefined) {
      this.#db.durable(() => {
        this.#db
          .stmt("INSERT INTO sealed_label_scopes (scope) VALUES (?) ON CONFLICT (scope) DO NOTHING")
          .run(key);
        // The seal refuses every later put: no row of the scope, no tombstone, is kept.
        this.#db.stmt("DELETE FROM session_labels WHERE scope = ?").run(key);
      });
      return;
    }
    const id = validateId("sessionId", sessionId);
    this.#db.durable(() => eraseLabelRows(this.#db, key, { id, mark: this.#db.mark(scope, id) }));
  }
}
