import { InvalidIdError, InvalidScopeError, type Msg, type Scope } from "@alma-harness/core";

/**
 * The slice of a test framework the suites use, passed in by the caller so this package imports
 * none. Vitest's `describe`, `it` and `expect` satisfy it as they are.
 */
export interface Matchers {
  toBe(expected: unknown): void;
  toEqual(expected: unknown): void;
  toBeUndefined(): void;
  toBeInstanceOf(expected: abstract new (...args: never[]) => unknown): void;
  toHaveLength(length: number): void;
  toMatchObject(expected: object): void;
  toContain(item: unknown): void;
  readonly not: Matchers;
}

export interface TestApi {
  describe(name: string, body: () => void): void;
  it(name: string, body: () => Promise<void>): void;
  /** `message` names the check in a failure. */
  expect(actual: unknown, message?: string): Matchers;
  beforeEach?(body: () => Promise<void> | void): void;
  afterEach?(body: () => Promise<void> | void): void;
}

/** What every fixture may offer: `close` releases its connections (it may be called more than once). */
export interface Closable {
  close?(): Promise<void> | void;
}

export type Factory<F extends Closable> = () => F | Promise<F>;

/** A test body gets a fresh fixture, and `closeNow` for tests that need a closed store. */
export type Body<F> = (fx: F, closeNow: () => Promise<void>) => Promise<void>;

/** Declares one test (its title and body) on a fresh fixture: what a suite's `test` is. */
export type FixtureTest<F> = (title: string, body: Body<F>) => void;

/** Declares one test that builds a fresh fixture, runs the body and always closes the fixture. */
export function fixtureTest<F extends Closable>(t: TestApi, factory: Factory<F>): FixtureTest<F> {
  return (title, body) =>
    t.it(title, async () => {
      const fx = await factory();
      let closed = false;
      const closeNow = async () => {
        if (closed) return;
        closed = true;
        await fx.close?.();
      };
      try {
        await body(fx, closeNow);
      } finally {
        await closeNow();
      }
    });
}

/** One group of a suite's tests, declared with the suite's `test`. */
export type TestGroup<F> = (t: TestApi, test: FixtureTest<F>) => void;

/** Declares the suite `title` of the groups, every test of them on a fresh fixture from `factory`. */
export function contractSuite<F extends Closable>(
  t: TestApi,
  title: string,
  factory: Factory<F>,
  groups: readonly TestGroup<F>[],
): void {
  const test = fixtureTest(t, factory);
  t.describe(title, () => {
    for (const group of groups) group(t, test);
  });
}

export type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * Asserts that `run` returns a promise that rejects with an instance of `type` (and `code`, when
 * given). A synchronous throw fails: every store method is asynchronous, errors included.
 */
export async function rejects(
  t: TestApi,
  run: () => Promise<unknown>,
  type: ErrorClass,
  code?: string,
): Promise<Error> {
  let pending: Promise<unknown>;
  try {
    pending = run();
  } catch (error) {
    t.expect({ threwSynchronously: describe(error) }).toEqual({ rejectedWith: type.name });
    throw error;
  }
  try {
    const value = await pending;
    t.expect({ resolved: value }).toEqual({ rejectedWith: type.name });
  } catch (error) {
    if (!(error instanceof type))
      t.expect({ rejected: describe(error) }).toEqual({ rejectedWith: type.name });
    if (code !== undefined) t.expect((error as { code?: unknown }).code).toBe(code);
    return error as Error;
  }
  throw new Error("unreachable");
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Whether a value and everything inside it is frozen. */
export function deepFrozen(value: unknown): boolean {
  if (value === null || typeof value !== "object") return true;
  if (!Object.isFrozen(value)) return false;
  return Object.values(value).every(deepFrozen);
}

/** Settles every promise and splits the outcomes, keeping their order. */
export async function settleAll<T>(promises: readonly Promise<T>[]): Promise<{
  readonly ok: T[];
  readonly failed: unknown[];
  readonly outcomes: PromiseSettledResult<T>[];
}> {
  const outcomes = await Promise.allSettled(promises);
  const ok: T[] = [];
  const failed: unknown[] = [];
  for (const o of outcomes) {
    if (o.status === "fulfilled") ok.push(o.value);
    else failed.push(o.reason);
  }
  return { ok, failed, outcomes };
}

export const SCOPE_A: Scope = Object.freeze({ org: "org-a", uid: "user-1" });
/** Same tenant, another person: a different scope. */
export const SCOPE_A2: Scope = Object.freeze({ org: "org-a", uid: "user-2" });
/** Another tenant. */
export const SCOPE_B: Scope = Object.freeze({ org: "org-b", uid: "user-1" });

/** Scopes every store must refuse before any I/O. */
export const BAD_SCOPES: readonly unknown[] = Object.freeze([
  undefined,
  null,
  "org-a/user-1",
  {},
  { org: "org-a" },
  { org: "org a", uid: "user-1" },
  { org: ".hidden", uid: "user-1" },
  { org: "org-a", uid: "user-1", extra: true },
  { org: "org-a", uid: "x".repeat(65) },
]);

/** Ids every store must refuse before any I/O. */
export const BAD_IDS: readonly unknown[] = Object.freeze([
  "",
  "has space",
  "x".repeat(201),
  "tab\there",
  "é",
  42,
  null,
]);

/** Asserts that each call refuses each of `BAD_SCOPES` with `InvalidScopeError` (before any I/O). */
export async function refusesBadScopes(
  t: TestApi,
  ...calls: readonly ((scope: Scope) => Promise<unknown>)[]
): Promise<void> {
  await refusesAll(t, BAD_SCOPES, InvalidScopeError, calls);
}

/** As `refusesBadScopes`, for a scope filter: there `undefined` means every scope, so it is not bad. */
export async function refusesBadScopeFilters(
  t: TestApi,
  ...calls: readonly ((scope: Scope) => Promise<unknown>)[]
): Promise<void> {
  await refusesAll(
    t,
    BAD_SCOPES.filter((scope) => scope !== undefined),
    InvalidScopeError,
    calls,
  );
}

/** Asserts that each call refuses each of `BAD_IDS` with `InvalidIdError` (before any I/O). */
export async function refusesBadIds(
  t: TestApi,
  ...calls: readonly ((id: string) => Promise<unknown>)[]
): Promise<void> {
  await refusesAll(t, BAD_IDS, InvalidIdError, calls);
}

async function refusesAll<T>(
  t: TestApi,
  values: readonly unknown[],
  type: ErrorClass,
  calls: readonly ((value: T) => Promise<unknown>)[],
): Promise<void> {
  for (const value of values)
    for (const call of calls) await rejects(t, () => call(value as T), type);
}

/** Lets a test pass a deliberately wrong value where the types forbid it. */
export function unsafe<T>(value: unknown): T {
  return value as T;
}

export function userMsg(text: string, eventId?: string, turn?: string): Msg {
  const meta = {
    ...(turn === undefined ? {} : { turn }),
    ...(eventId === undefined ? {} : { event: { id: eventId, kind: "input" as const } }),
  };
  return {
    role: "user",
    blocks: [{ type: "text", text }],
    ...(Object.keys(meta).length > 0 ? { meta } : {}),
  };
}

export function assistantMsg(text: string, turn?: string): Msg {
  return {
    role: "assistant",
    blocks: [{ type: "text", text }],
    ...(turn === undefined ? {} : { meta: { turn } }),
  };
}

export function rotationMsg(summary: string, replaces: number): Msg {
  return {
    role: "user",
    blocks: [{ type: "text", text: summary, origin: "harness" }],
    meta: { rotation: { replaces } },
  };
}

export const T0 = Date.UTC(2026, 0, 1);
