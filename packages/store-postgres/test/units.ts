import type { GovernedFixture, StoreSet } from "@alma-harness/testing";
import type { PostgresStores } from "../src/index.js";

/** What the grouped suites hand the contracts: a store set whose calls run inside units. */

const STORES = [
  "admissions",
  "sessions",
  "execution",
  "journal",
  "results",
  "rootResults",
  "settlements",
  "spend",
  "labels",
  "usageInbox",
  "modelJobs",
  "parked",
  "erasure",
  "audit",
] as const;

/** `stores` with every method of every store run through `run` (a unit per call, or one shared unit). */
export function through(
  stores: PostgresStores,
  run: <T>(call: () => Promise<T>) => Promise<T>,
  close: () => Promise<void>,
): Fixture {
  const wrapped: Record<string, unknown> = { close };
  for (const name of STORES) {
    const store = stores[name] as unknown as Record<string, unknown>;
    wrapped[name] = new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        return typeof value === "function"
          ? (...args: unknown[]) =>
              run(() => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args))
          : value;
      },
    });
  }
  return wrapped as unknown as Fixture;
}

export type Fixture = StoreSet & GovernedFixture;

export function unitOf(stores: PostgresStores): <T>(work: () => Promise<T>) => Promise<T> {
  const unit = stores.unit;
  if (!unit) throw new Error("grouped stores offer unit");
  return unit;
}

/** Every call in its own unit: lazily begun, committed when the call returns. */
export function unitPerCall(stores: PostgresStores): Fixture {
  const unit = unitOf(stores);
  return through(
    stores,
    (call) => unit(call),
    () => stores.close(),
  );
}
