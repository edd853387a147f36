import { inline } from "./literals.js";

/** One column's values of a batch (a text array parameter). */
type Column = (string | null)[];

/**
 * Rows of append-only inserts that wait, in a grouped unit's open transaction, for its commit, its
 * next read or its next write that reads what they change (issue 26: a turn's trail records join
 * the transaction of the step they describe as one multi-row insert). Each batch text is an `INSERT … SELECT … FROM unnest($1::text[], …)` that
 * takes one array per column; the rows of one text go as one statement, in the order they came.
 */
export class DeferredRows {
  readonly #batches = new Map<string, Column[]>();
  /**
   * Whole statements (values inlined; each checks itself, nobody reads its answer) that wait, as
   * the rows do, for the commit, a read, or a write that reads what they change.
   */
  readonly #late: string[] = [];
  /** Where a keyed late statement waits in `#late` (`addLate`'s `replaces`). */
  readonly #keyed = new Map<string, number>();

  get size(): number {
    return this.#batches.size + this.#late.length;
  }

  /** `replaces`: a key; a statement still waiting under it is replaced, in its place. */
  addLate(statement: string, replaces?: string): void {
    const at = replaces === undefined ? undefined : this.#keyed.get(replaces);
    if (at !== undefined) {
      this.#late[at] = statement;
      return;
    }
    if (replaces !== undefined) this.#keyed.set(replaces, this.#late.length);
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
    this.#keyed.clear();
  }

  /**
   * Takes every waiting row and late statement: `joined` is the statements that ride in the next
   * round trip (their arrays inlined as literals), `apart` the ones whose values have no safe
   * literal (sent alone).
   */
  take(): {
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
    joined.push(...this.#late.splice(0));
    this.#keyed.clear();
    return { joined: joined.length > 0 ? joined.join("; ") : undefined, apart };
  }
}
