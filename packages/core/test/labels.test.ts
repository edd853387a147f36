import {
  normalizeSessionLabels,
  SnapshotError,
  type SnapshotRule,
  ValidationError,
} from "@alma-harness/core";
import { InMemorySessionLabelStore } from "@alma-harness/core/memory";
import { describe, expect, it } from "vitest";

/**
 * Session labels go through the bounded snapshot before any rule of their own: a getter is never
 * called, a Proxy is refused before any trap runs (so no trap value is stored), and symbol or hidden
 * keys are rejections, not silently dropped. Every rejection is a typed `ValidationError`.
 */
const SCOPE = { org: "clinic-a", uid: "u1" };

function counting() {
  let runs = 0;
  const run = (value: unknown) => {
    runs += 1;
    return value;
  };
  return { runs: () => runs, run };
}

const HOSTILE: readonly {
  name: string;
  rule: SnapshotRule;
  build: (c: ReturnType<typeof counting>) => unknown;
}[] = [
  {
    name: "a getter",
    rule: "accessor",
    build: (c) =>
      Object.defineProperty({ team: "a" }, "site", { enumerable: true, get: () => c.run("b") }),
  },
  {
    name: "a Proxy whose traps return values",
    rule: "proxy",
    build: (c) =>
      new Proxy(
        { team: "a" },
        {
          get: (t, k) => c.run(Reflect.get(t, k)),
          getOwnPropertyDescriptor: (t, k) =>
            c.run(Reflect.getOwnPropertyDescriptor(t, k)) as PropertyDescriptor,
        },
      ),
  },
  {
    name: "a Proxy whose ownKeys trap throws",
    rule: "proxy",
    build: (c) => new Proxy({ team: "a" }, { ownKeys: () => c.run(undefined) as never }),
  },
  { name: "a symbol key", rule: "symbol_key", build: () => ({ team: "a", [Symbol("site")]: "b" }) },
  {
    name: "a hidden key",
    rule: "hidden_property",
    build: () => Object.defineProperty({ team: "a" }, "site", { value: "b", enumerable: false }),
  },
  { name: "a nested object", rule: "depth", build: () => ({ team: { nested: "a" } }) },
  {
    name: "a value one over 128 bytes",
    rule: "string_bytes",
    build: () => ({ team: "a".repeat(129) }),
  },
  {
    name: "a class instance",
    rule: "non_plain",
    build: () => Object.assign(Object.create({ inherited: "x" }), { team: "a" }),
  },
];

describe("session labels: hostile input", () => {
  for (const shape of HOSTILE) {
    it(`rejects ${shape.name} with the typed error, running no accessor`, async () => {
      const c = counting();
      const error = (() => {
        try {
          normalizeSessionLabels(shape.build(c));
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(SnapshotError);
      expect((error as SnapshotError).rule).toBe(shape.rule);
      // The store takes the same path: nothing stored, nothing run.
      const store = new InMemorySessionLabelStore();
      await expect(store.put(SCOPE, "s1", shape.build(c) as never)).rejects.toBeInstanceOf(
        SnapshotError,
      );
      expect(await store.get(SCOPE, "s1")).toBeUndefined();
      expect(c.runs()).toBe(0);
    });
  }

  it("holds every limit at the limit and refuses one over", () => {
    const eight = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`k${i}`, "v"]));
    expect(Object.keys(normalizeSessionLabels(eight))).toHaveLength(8);
    expect(() => normalizeSessionLabels({ ...eight, k8: "v" })).toThrow(ValidationError);
    const key32 = `k${"a".repeat(31)}`;
    expect(normalizeSessionLabels({ [key32]: "v".repeat(128) })).toEqual({
      [key32]: "v".repeat(128),
    });
    expect(() => normalizeSessionLabels({ [`${key32}a`]: "v" })).toThrow(ValidationError);
    expect(() => normalizeSessionLabels({})).toThrow(ValidationError);
  });

  it("names the rule, never the key or value sent", () => {
    for (const labels of [{ "Phone-5551234567": "x" }, { team: "5551234567 !" }]) {
      try {
        normalizeSessionLabels(labels);
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        const e = error as ValidationError;
        expect(`${e.message} ${e.path}`).not.toContain("5551234567");
      }
    }
  });
});
