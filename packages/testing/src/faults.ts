import { StoreUnavailableError } from "@alma-harness/core";

/**
 * What the injector does to one store call: `before` throws without calling the store (nothing
 * happened), `after` calls the store, lets its effect stand, then throws instead of answering
 * ("executed, then reported a failure": a lost acknowledgement), `pass` answers as the store did.
 */
export type FaultMode = "before" | "after" | "pass";

/** The error every injected fault throws: a store outage, as a real driver's would read. */
export class InjectedStoreFault extends StoreUnavailableError {
  readonly mode: Exclude<FaultMode, "pass">;
  readonly store: string;
  readonly method: string;
  constructor(mode: Exclude<FaultMode, "pass">, store: string, method: string) {
    super(
      mode === "before"
        ? `injected fault before ${store}.${method}`
        : `injected fault after ${store}.${method} (acknowledgement lost)`,
    );
    this.mode = mode;
    this.store = store;
    this.method = method;
  }
}

export interface FaultOptions {
  /** The seed of the decision stream: the same seed and the same call order inject the same faults. */
  readonly seed: number;
  /** The share of calls that fail, 0 to 1. */
  readonly rate: number;
  /** Of the failing calls, the share that fail after their effect (default one half). */
  readonly afterShare?: number;
}

export interface FaultCounts {
  readonly calls: number;
  readonly before: number;
  readonly after: number;
  /** Injected faults (before plus after) by `store.method`. */
  readonly byMethod: Readonly<Record<string, number>>;
}

/** A small seeded generator (mulberry32): reproducible, no dependency. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * Injects seeded faults into every method of every store it wraps. Decisions are drawn in call
 * order from one seeded stream, so a single-threaded run (memory, SQLite) replays exactly from its
 * seed. `enabled` pauses injection (for the test's own maintenance and reads); `counts()` reports
 * what was injected.
 */
export class StoreFaults {
  enabled = true;
  readonly #next: () => number;
  readonly #rate: number;
  readonly #afterShare: number;
  #calls = 0;
  #before = 0;
  #after = 0;
  readonly #byMethod: Record<string, number> = {};

  constructor(options: FaultOptions) {
    if (!(options.rate >= 0 && options.rate <= 1)) throw new RangeError("rate must be 0 to 1");
    const afterShare = options.afterShare ?? 0.5;
    if (!(afterShare >= 0 && afterShare <= 1)) throw new RangeError("afterShare must be 0 to 1");
    this.#next = generator(options.seed);
    this.#rate = options.rate;
    this.#afterShare = afterShare;
  }

  /** The mode of the next call of `store.method` (counted). */
  decide(store: string, method: string): FaultMode {
    if (!this.enabled) return "pass";
    this.#calls += 1;
    if (this.#next() >= this.#rate) return "pass";
    const mode: FaultMode = this.#next() < this.#afterShare ? "after" : "before";
    if (mode === "after") this.#after += 1;
    else this.#before += 1;
    const name = `${store}.${method}`;
    this.#byMethod[name] = (this.#byMethod[name] ?? 0) + 1;
    return mode;
  }

  counts(): FaultCounts {
    return Object.freeze({
      calls: this.#calls,
      before: this.#before,
      after: this.#after,
      byMethod: Object.freeze({ ...this.#byMethod }),
    });
  }

  /** One store with every method (own or inherited) faulted under `name`; other properties pass through. */
  wrap<T extends object>(name: string, store: T): T {
    return tapStore(store, async (method, call) => {
      const mode = this.decide(name, method);
      if (mode === "before") throw new InjectedStoreFault("before", name, method);
      const out = await call();
      if (mode === "after") throw new InjectedStoreFault("after", name, method);
      return out;
    });
  }

  /**
   * Every store of a set (each property that is an object: admissions, sessions, journal, the
   * barrier…), each method faulted under the property's name. Functions of the set itself (a
   * `unit`) pass through: they are not store calls.
   */
  wrapAll<S extends object>(stores: S): S {
    return tapStores(stores, (name, store) => this.wrap(name, store));
  }
}

/** What runs around one store call: `call` performs it (with the store's own `this`) and answers what it answered. */
export type StoreCallTap = (method: string, call: () => Promise<unknown>) => Promise<unknown>;

/**
 * One store with every method (own or inherited) run through `tap`; other properties pass
 * through. The base of `StoreFaults`, and of tests that act at a chosen store call (a process
 * killed just before or just after its Nth store call).
 */
export function tapStore<T extends object>(store: T, tap: StoreCallTap): T {
  const cache = new Map<PropertyKey, unknown>();
  const target = store;
  // The proxy's own target is a fresh object inheriting from the store: a frozen store (a
  // composition's `barrier`) would make a proxy over itself refuse to return a wrapped method.
  return new Proxy(Object.create(store) as T, {
    get: (_shell, prop) => {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== "function" || prop === "constructor") return value;
      let wrapped = cache.get(prop);
      if (wrapped === undefined) {
        const method = String(prop);
        const fn = value as (...args: unknown[]) => unknown;
        // The store's own `this`: private fields live on the target, not on the proxy.
        wrapped = (...args: unknown[]) => tap(method, async () => await fn.apply(target, args));
        cache.set(prop, wrapped);
      }
      return wrapped;
    },
  });
}

/**
 * Every store of a set (each property that is an object: admissions, sessions, journal, the
 * barrier…) through `wrap` under the property's name. Functions of the set itself (a `unit`) pass
 * through: they are not store calls.
 */
export function tapStores<S extends object>(
  stores: S,
  wrap: (name: string, store: object) => object,
): S {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(stores))
    out[key] = value !== null && typeof value === "object" ? wrap(key, value) : value;
  return out as S;
}
