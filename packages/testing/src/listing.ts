import { type Scope, ValidationError } from "@alma-harness/core";
import {
  type Closable,
  type FixtureTest,
  rejects,
  SCOPE_A,
  SCOPE_B,
  type TestApi,
} from "./harness.js";

export interface Page {
  readonly items: readonly unknown[];
  readonly nextCursor?: string;
}

export interface ListingSpec<F> {
  readonly what: string;
  readonly def: number;
  readonly max: number;
  /** Creates `n` listable items in `scope` whose keys ascend in creation order. */
  seed(fx: F, n: number, scope: Scope): Promise<void>;
  list(
    fx: F,
    scope: Scope,
    opts: { readonly cursor?: string; readonly limit?: number },
  ): Promise<Page>;
  /** A string key that sorts like the listing's order. */
  key(item: unknown): string;
}

/** The cursor-listing guarantees shared by every listing: default and maximum page, one over, cursors, scope. */
export function listingTests<F extends Closable>(
  t: TestApi,
  test: FixtureTest<F>,
  spec: ListingSpec<F>,
): void {
  test(`${spec.what}: list pages ${spec.def} by default, ascending, with a cursor only while more remain`, async (fx) => {
    await spec.seed(fx, spec.def + 1, SCOPE_A);
    const first = await spec.list(fx, SCOPE_A, {});
    t.expect(first.items).toHaveLength(spec.def);
    t.expect(typeof first.nextCursor).toBe("string");
    const second = await spec.list(fx, SCOPE_A, { cursor: first.nextCursor });
    t.expect(second.items).toHaveLength(1);
    t.expect(second.nextCursor).toBeUndefined();
    const keys = [...first.items, ...second.items].map(spec.key);
    t.expect(new Set(keys).size).toBe(spec.def + 1);
    t.expect(keys).toEqual([...keys].sort());
    t.expect(await spec.list(fx, SCOPE_B, {})).toEqual({ items: [] });
    t.expect(await spec.list(fx, SCOPE_B, { cursor: first.nextCursor })).toEqual({ items: [] });
  });

  test(`${spec.what}: a page exactly as long as the limit has no cursor; one over has one`, async (fx) => {
    await spec.seed(fx, 3, SCOPE_A);
    t.expect((await spec.list(fx, SCOPE_A, { limit: 3 })).nextCursor).toBeUndefined();
    const two = await spec.list(fx, SCOPE_A, { limit: 2 });
    t.expect(two.items).toHaveLength(2);
    const rest = await spec.list(fx, SCOPE_A, { limit: 2, cursor: two.nextCursor });
    t.expect(rest.items.map(spec.key)).toEqual(
      (await spec.list(fx, SCOPE_A, {})).items.slice(2).map(spec.key),
    );
    t.expect(rest.nextCursor).toBeUndefined();
  });

  test(`${spec.what}: a limit outside 1..${spec.max} or a foreign cursor is refused`, async (fx) => {
    t.expect((await spec.list(fx, SCOPE_A, { limit: spec.max })).items).toEqual([]);
    for (const limit of [0, -1, 1.5, spec.max + 1, Number.NaN]) {
      await rejects(t, () => spec.list(fx, SCOPE_A, { limit }), ValidationError);
    }
    for (const cursor of ["", "not a cursor", "bm90IGpzb24", "W10", "x".repeat(2000)]) {
      await rejects(t, () => spec.list(fx, SCOPE_A, { cursor }), ValidationError);
    }
  });
}
