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
import type pg from "pg";
import { asConn, type Conn } from "./conn.js";
import { eraseLabelRows, lockLabelScope as lockScope } from "./erasure.js";

/** Session labels in PostgreSQL. Tombstones and seals are rows; per-scope serialization means a seal can never be outrun by a put. */
export class PgSessionLabelStore implements SessionLabelStore {
  readonly #db: Conn;

  constructor(pool: pg.Pool | Conn) {
    this.#db = asConn(pool);
  }

  async put(scope: Scope, sessionId: string, labels: SessionLabels): Promise<SessionLabels> {
    const { key } = scopeKey(scope);
    const id = validateId("sessionId", sessionId);
    const normalized = normalizeSessionLabels(labels);
    const text = canonicalJson(normalized);
    return this.#db.transaction(async (tx) => {
      await lockScope(tx, key);
      if ((await tx.query("SELECT 1 FROM sealed_label_scopes WHERE scope = $1", [key])).rowCount)
        throw new SessionLabelErasedError();
      // The row under the id, or the tombstone under the session's mark.
      const found = await tx.query<{ labels: string | null; erased: boolean }>(
        "SELECT labels, erased FROM session_labels WHERE scope = $1 AND session_id IN ($2, $3) ORDER BY erased DESC",
        [key, id, this.#db.mark(scope, id)],
      );
      const row = found.rows[0];
      if (row?.erased) throw new SessionLabelErasedError();
      if (row) {
        if (row.labels === text) return normalized;
        throw new SessionLabelConflictError();
      }
      await tx.query("INSERT INTO session_labels (scope, session_id, labels) VALUES ($1, $2, $3)", [
        key,
        id,
        text,
      ]);
      return normalized;
    });
  }

  async get(scope: Scope, sessionId: string): Promise<SessionLabels | undefined> {
    const { key } = scopeKey(scope);
    const id = validateId("sessionId", sessionId);
    const { rows } = await this.#db.query<{ labels: string | null }>(
      `SELECT l.labels FROM session_labels l WHERE l.scope = $1 AND l.session_id = $2 AND NOT l.erased
       AND NOT EXISTS (SELECT 1 FROM sealed_label_scopes s WHERE s.scope = l.scope)`,
      [key, id],
    );
    const text = rows[0]?.labels;
    return text ? labelsFromText(text) : undefined;
  }

  async erase(scope: Scope, sessionId?: string): Promise<void> {
    const { key } = scopeKey(scope);
    const id = sessionId === undefined ? undefined : validateId("sessionId", sessionId);
    // An erasure is a durability point.
    await this.#db.transaction(
      async (tx) => {
        await lockScope(tx, key);
        if (id === undefined) {
          await tx.query(
            "INSERT INTO sealed_label_scopes (scope) VALUES ($1) ON CONFLICT (scope) DO NOTHING",
            [key],
          );
          // The seal refuses every later put: no row of the scope, no tombstone, is kept.
          await tx.query("DELETE FROM session_labels WHERE scope = $1", [key]);
          return;
        }
        await eraseLabelRows(tx, key, { id, mark: this.#db.mark(scope, id) });
      },
      { durable: true },
    );
  }
}
