import { inline } from "./literals.js";

/** One column's values of a batch (a text array parameter). */
type Column = (string | null)[];

/**
 * Rows of append-only inserts that wait, in a grouped unit's open transaction, for the unit's next
 * statement (issue 26: a turn's trail records join the transaction of the step they describe as
 * one multi-row insert). Each batch text is an `INSERT … SELECT … FROM unnest($1::text[], …)` that
 * takes one array per column; the rows of one text go as one statement, in the order they came.
 */
export class DeferredRows {
  readonly #batches = new Map<string, Column[]>();
  /**
   * Whole statements (values inlined; each checks itself, nobody reads its answer) that wait longer
   * than the rows: for the commit, a read, or a write that reads what they change (`take(true)`).
   */
  readonly #late: string[] = [];

  get size(): number {
    return this.#batches.size + this.#late.length;
  }

  addLate(statement: string): void {
    this.#late.push(statement);
  }

  add(text: string, row: readonly (string | null)[]): void {
    let columns = this.#batches.get(text);
    if (!columns) {
      columns = row.map(() => []);
      this.#batches.set(text, columns);
    }
    row.forEach((value, i) => {
      columns[i]?.push(value);
    });
  }

  /** Forgets every row (the transaction they were to join is gone). */
  clear(): void {
    this.#batches.clear();
    this.#late.length = 0;
  }

  /**
   * Takes every waiting row (and, with `late`, every late statement): `joined` is the statements
   * that ride in the next round trip (their arrays inlined as literals), `apart` the ones whose
   * values have no safe literal (sent alone).
   */
  take(late: boolean): {
    readonly joined: string | undefined;
    readonly apart: readonly { readonly text: string; readonly values: Column[] }[];
  } {
    const joined: string[] = [];
    const apart: { text: string; values: Column[] }[] = [];
    for (const [text, values] of this.#batches) {
      const statement = inline(text, values);
      if (statement === undefined) apart.push({ text, values });
      else joined.push(statement);
    }
    this.#batches.clear();
    if (late) joined.push(...this.#late.splice(0));
    return { joined: joined.length > 0 ? joined.join("; ") : undefined, apart };
  }
}
