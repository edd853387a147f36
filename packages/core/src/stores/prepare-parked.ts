import { type ParkedTurnRow, parkedSummaryFromRow } from "./codecs.js";
import type { ParkedAsk, ParkedTurnSummary, TurnOutput } from "./parked.js";
import { isDue, normalizeDue, normalizeParkedList } from "./parked-rules.js";

/** What the SQL parked-turn stores do around their statements (see `prepare.ts`). */

/** A `due` candidate as the SQL stores read it: the turn's row and its holding admission's deadline. */
export interface DueRow extends ParkedTurnRow {
  readonly holder_deadline_at: number;
}

/** What one page of `due` candidates is read with: after `(expires_at, root_key, scope)`, `batch` rows. */
export interface DueQuery {
  readonly now: number;
  /** One scope's key, or `null` for every scope. */
  readonly only: string | null;
  readonly after: readonly [number, string, string];
  readonly batch: number;
}

const DUE_BATCH = 100;

/**
 * `due` over a store's candidate query: `fetch` answers, in `(expires_at, root_key, scope)` order,
 * the turns whose holding admission is `active` and that are parked (every ask decided is due too),
 * or whose expiry or holder's deadline is at or before `now` (a superset: a resuming turn past its
 * asks' expiry may still be running, a park may still wait for a decision); `isDue`
 * keeps the ones a tick must go on with, page after page until `limit` are found.
 */
export async function collectDue(
  input: unknown,
  fetch: (q: DueQuery) => Promise<readonly DueRow[]> | readonly DueRow[],
): Promise<readonly ParkedTurnSummary[]> {
  const d = normalizeDue(input);
  const batch = Math.max(d.limit, DUE_BATCH);
  const out: ParkedTurnSummary[] = [];
  let after: DueQuery["after"] = [-1, "", ""];
  for (;;) {
    const rows = await fetch({ now: d.now, only: d.only, after, batch });
    for (const row of rows) {
      const turn = parkedSummaryFromRow(row);
      if (isDue(turn, row.holder_deadline_at, d.now)) out.push(turn);
    }
    const last = rows[rows.length - 1];
    if (out.length >= d.limit || !last || rows.length < batch) break;
    after = [last.expires_at, last.root_key, last.scope];
  }
  return Object.freeze(out.slice(0, d.limit));
}

/**
 * `list` as a key range: an org's scopes are the keys in `[org/, org0)` (`0` follows `/`), one
 * scope's is its key (`only`).
 */
export function prepareParkedList(input: unknown): {
  readonly from: string;
  readonly to: string;
  readonly only: string | null;
  readonly limit: number;
} {
  const l = normalizeParkedList(input);
  return {
    from: `${l.org}/`,
    to: `${l.org}0`,
    only: l.uid === null ? null : `${l.org}/${l.uid}`,
    limit: l.limit,
  };
}

/** A park's JSON columns: the asks and the continuation, as text of the record format. */
export function parkedColumns(p: {
  readonly asks: readonly ParkedAsk[];
  readonly continuation: unknown;
}): {
  readonly asks: string;
  readonly continuation: string;
} {
  return { asks: JSON.stringify(p.asks), continuation: JSON.stringify(p.continuation) };
}

/** A write's outputs as two parallel text arrays: digests, and messages as text of the record format. */
export function outputColumns(outputs: readonly TurnOutput[]): {
  readonly digests: string[];
  readonly messages: string[];
} {
  return {
    digests: outputs.map((o) => o.digest),
    messages: outputs.map((o) => JSON.stringify(o.message)),
  };
}
