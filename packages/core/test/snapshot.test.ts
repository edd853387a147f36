import {
  AlmaError,
  canonicalJson,
  DEFAULT_SNAPSHOT_LIMITS,
  type JsonValue,
  SnapshotError,
  type SnapshotRule,
  snapshot,
  snapshotObject,
  utf8Length,
  ValidationError,
} from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { thrown } from "./thrown.js";

/** Runs `fn`, expects a SnapshotError, and returns it for further checks. */
const rejection = (fn: () => unknown): SnapshotError => thrown(SnapshotError, fn);

function expectRule(value: unknown, rule: SnapshotRule, path: string): SnapshotError {
  const error = rejection(() => snapshot(value));
  expect({ rule: error.rule, path: error.path }).toEqual({ rule, path });
  return error;
}

/** `levels` nested containers: depth 1 is `[]`. */
function nestedArrays(levels: number): unknown {
  let value: unknown = [];
  for (let i = 1; i < levels; i++) value = [value];
  return value;
}

function nestedObjects(levels: number): unknown {
  let value: unknown = {};
  for (let i = 1; i < levels; i++) value = { k: value };
  return value;
}

function expectDeeplyFrozen(value: JsonValue): void {
  if (value === null || typeof value !== "object") return;
  expect(Object.isFrozen(value)).toBe(true);
  for (const child of Object.values(value)) expectDeeplyFrozen(child as JsonValue);
}

describe("snapshot: plain JSON data", () => {
  it("copies every JSON type and keeps key order and array order", () => {
    const input = {
      s: "text",
      n: 1.5,
      i: -3,
      t: true,
      f: false,
      z: null,
      a: [1, "two", { three: 3 }],
      o: { nested: [] },
    };
    const copy = snapshot(input);
    expect(copy).toEqual(input);
    expect(copy).not.toBe(input);
    expect(Object.keys(copy as object)).toEqual(["s", "n", "i", "t", "f", "z", "a", "o"]);
  });

  it("accepts scalars at the root", () => {
    expect(snapshot("hello")).toBe("hello");
    expect(snapshot(42)).toBe(42);
    expect(snapshot(false)).toBe(false);
    expect(snapshot(null)).toBe(null);
  });

  it("accepts objects without a prototype and returns an ordinary plain object", () => {
    const bare = Object.create(null) as Record<string, unknown>;
    bare.a = 1;
    const copy = snapshot(bare) as Record<string, unknown>;
    expect(copy).toEqual({ a: 1 });
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
  });

  it("turns -0 into 0, at the root and nested", () => {
    expect(Object.is(snapshot(-0), 0)).toBe(true);
    const copy = snapshot({ a: [-0], b: -0 }) as { a: number[]; b: number };
    expect(Object.is(copy.a[0], 0)).toBe(true);
    expect(Object.is(copy.b, 0)).toBe(true);
  });

  it("omits object properties whose value is undefined, as JSON does", () => {
    const copy = snapshot({ a: 1, b: undefined, c: { d: undefined } });
    expect(copy).toEqual({ a: 1, c: {} });
    expect(Object.hasOwn(copy as object, "b")).toBe(false);
  });

  it("copies a shared (acyclic) reference once per occurrence", () => {
    const shared = { x: 1 };
    const copy = snapshot({ a: shared, b: shared }) as Record<string, Record<string, number>>;
    expect(copy).toEqual({ a: { x: 1 }, b: { x: 1 } });
    shared.x = 2;
    expect(copy.a?.x).toBe(1);
  });
});

describe("snapshot: detached and deeply frozen", () => {
  it("is unaffected by mutating the original afterwards", () => {
    const original = { list: [1, { deep: "a" }], map: { k: "v" }, n: 1 };
    const copy = snapshot(original);
    original.list.push(3);
    (original.list[1] as { deep: string }).deep = "changed";
    original.map.k = "changed";
    original.n = 2;
    (original as Record<string, unknown>).added = true;
    expect(copy).toEqual({ list: [1, { deep: "a" }], map: { k: "v" }, n: 1 });
  });

  it("freezes every container of the copy", () => {
    const copy = snapshot({ a: [{ b: [1, 2, { c: {} }] }], d: {} });
    expectDeeplyFrozen(copy);
    const obj = copy as Record<string, unknown>;
    expect(() => {
      obj.d = 1;
    }).toThrow(TypeError);
    expect(() => {
      (obj.a as unknown[]).push(1);
    }).toThrow(TypeError);
  });

  it("does not freeze or change the input", () => {
    const input = { a: [1], b: { c: 2 } };
    snapshot(input);
    expect(Object.isFrozen(input)).toBe(false);
    expect(Object.isFrozen(input.a)).toBe(false);
    expect(input).toEqual({ a: [1], b: { c: 2 } });
  });
});

describe("snapshot: __proto__ keys", () => {
  it("keeps an own __proto__ key as data, without changing any prototype", () => {
    const hostile = JSON.parse('{"__proto__": {"polluted": true}, "ok": 1}') as unknown;
    const copy = snapshot(hostile) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(copy.polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.hasOwn(copy, "__proto__")).toBe(true);
    expect(Object.getOwnPropertyDescriptor(copy, "__proto__")?.value).toEqual({ polluted: true });
    expect(canonicalJson(copy as JsonValue)).toBe('{"__proto__":{"polluted":true},"ok":1}');
  });

  it("does not pollute through a nested __proto__ either", () => {
    const hostile = JSON.parse('{"a": {"__proto__": {"isAdmin": true}}}') as unknown;
    const copy = snapshot(hostile) as { a: Record<string, unknown> };
    expect(copy.a.isAdmin).toBeUndefined();
    expect(Object.getPrototypeOf(copy.a)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  });
});

describe("snapshot: accessors and descriptors", () => {
  it("rejects a getter without calling it", () => {
    let calls = 0;
    const input = {
      get secret() {
        calls += 1;
        return "x";
      },
    };
    const error = expectRule(input, "accessor", "$.secret");
    expect(calls).toBe(0);
    expect(error.message).toContain("$.secret");
  });

  it("rejects a getter that returns a different value on every read, without reading it", () => {
    let reads = 0;
    const input = {};
    Object.defineProperty(input, "flip", {
      enumerable: true,
      get() {
        reads += 1;
        return reads % 2 === 1 ? "safe" : { evil: true };
      },
    });
    expectRule(input, "accessor", "$.flip");
    expect(reads).toBe(0);
  });

  it("rejects a setter-only property and an accessor on an array index", () => {
    const setterOnly = {};
    Object.defineProperty(setterOnly, "s", { enumerable: true, set() {} });
    expectRule(setterOnly, "accessor", "$.s");

    const list = [1, 2];
    Object.defineProperty(list, 1, { enumerable: true, get: () => 2 });
    expectRule(list, "accessor", "$[1]");
  });

  it("refuses a Proxy before any of its traps runs (the platform tells a Proxy apart)", () => {
    let trapCalls = 0;
    const counted =
      <A extends unknown[], R>(f: (...args: A) => R) =>
      (...args: A): R => {
        trapCalls += 1;
        return f(...args);
      };
    const traps: ProxyHandler<Record<string, unknown>> = {
      getOwnPropertyDescriptor: counted(Reflect.getOwnPropertyDescriptor),
      get: counted(Reflect.get),
      ownKeys: counted(Reflect.ownKeys),
      getPrototypeOf: counted(Reflect.getPrototypeOf),
    };
    expectRule(new Proxy({ v: "x" }, traps), "proxy", "$");
    expectRule({ nested: [new Proxy({ v: "x" }, traps)] }, "proxy", "$.nested[0]");
    expectRule(new Proxy([1], traps as ProxyHandler<never>), "proxy", "$");
    expect(trapCalls).toBe(0);
  });

  it("rejects non-enumerable properties, which JSON would silently drop", () => {
    const input = { visible: 1 };
    Object.defineProperty(input, "hidden", { value: 2, enumerable: false });
    expectRule(input, "hidden_property", "$.hidden");
  });
});

describe("snapshot: symbols, cycles, arrays", () => {
  it("rejects symbol keys on objects and arrays", () => {
    expectRule({ a: 1, [Symbol("s")]: 2 }, "symbol_key", "$");
    const list: unknown[] = [1];
    (list as unknown as Record<symbol, unknown>)[Symbol.for("x")] = 1;
    expectRule({ list }, "symbol_key", "$.list");
  });

  it("rejects a symbol value", () => {
    expectRule({ a: Symbol("v") }, "unsupported_type", "$.a");
  });

  it("rejects direct and indirect cycles, naming where the cycle closes", () => {
    const direct: Record<string, unknown> = {};
    direct.self = direct;
    expectRule(direct, "cycle", "$.self");

    const a: Record<string, unknown> = { list: [] };
    const b = { back: a };
    (a.list as unknown[]).push(b);
    expectRule(a, "cycle", "$.list[0].back");
  });

  it("rejects sparse arrays, whether the hole is written or made by length", () => {
    // biome-ignore lint/suspicious/noSparseArray: the hostile shape under test
    expectRule({ a: [1, , 3] }, "sparse_array", "$.a");
    expectRule(new Array(3), "sparse_array", "$");
    const grown = [1];
    grown.length = 1_000_000_000;
    expectRule(grown, "sparse_array", "$");
  });

  it("rejects named properties on arrays", () => {
    const list = Object.assign([1, 2], { extra: "x" });
    const error = expectRule({ list }, "array_property", "$.list");
    // The message names the rule, never the property that was sent.
    expect(error.message).not.toContain("extra");
  });

  it("rejects bigint, function, undefined and symbol inside arrays, naming the index", () => {
    expectRule([1, 10n], "unsupported_type", "$[1]");
    expectRule([0, 1, () => 1], "unsupported_type", "$[2]");
    expectRule([undefined], "unsupported_type", "$[0]");
    expectRule([Symbol("s")], "unsupported_type", "$[0]");
  });

  it("rejects bigint and function object values, and undefined at the root", () => {
    expectRule({ n: 1n }, "unsupported_type", "$.n");
    expectRule({ f() {} }, "unsupported_type", "$.f");
    expectRule(undefined, "unsupported_type", "$");
  });
});

describe("snapshot: non-plain values", () => {
  class Patient {
    name = "Ana";
  }
  class MyList extends Array<number> {}

  const cases: [string, unknown][] = [
    ["a class instance", new Patient()],
    ["a Map", new Map([["a", 1]])],
    ["a Set", new Set([1])],
    ["a Date", new Date(0)],
    ["a RegExp", /x/],
    ["an Error", new Error("x")],
    ["a boxed string", new String("x")],
    ["a typed array", new Uint8Array(2)],
    ["an object with a custom prototype", Object.create({ inherited: 1 })],
    ["an Array subclass", MyList.from([1, 2])],
    ["a Promise", Promise.resolve(1)],
  ];

  for (const [label, value] of cases) {
    it(`rejects ${label}`, () => {
      expectRule({ v: value }, "non_plain", "$.v");
    });
  }
});

describe("snapshot: non-finite numbers", () => {
  for (const value of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    it(`rejects ${value}`, () => {
      expectRule({ a: [0, value] }, "non_finite", "$.a[1]");
    });
  }
});

describe("snapshot: depth", () => {
  it("allows 64 levels of nesting and rejects 65 (arrays)", () => {
    expect(() => snapshot(nestedArrays(64))).not.toThrow();
    const error = rejection(() => snapshot(nestedArrays(65)));
    expect(error.rule).toBe("depth");
    expect(error.path).toBe(`$${"[0]".repeat(64)}`);
  });

  it("allows 64 levels of nesting and rejects 65 (objects)", () => {
    expect(() => snapshot(nestedObjects(64))).not.toThrow();
    const error = rejection(() => snapshot(nestedObjects(65)));
    expect(error.rule).toBe("depth");
    expect(error.path).toBe(`$${".k".repeat(64)}`);
  });

  it("counts only containers: scalars inside the 64th level still pass", () => {
    let value: unknown = ["leaf", 1, null];
    for (let i = 1; i < 64; i++) value = { k: value };
    expect(() => snapshot(value)).not.toThrow();
  });

  it("honors a custom depth", () => {
    expect(() => snapshot({ a: {} }, { maxDepth: 2 })).not.toThrow();
    expect(rejection(() => snapshot({ a: { b: {} } }, { maxDepth: 2 })).path).toBe("$.a.b");
  });
});

describe("snapshot: node count", () => {
  it("allows exactly 100,000 nodes and rejects 100,001", () => {
    expect(DEFAULT_SNAPSHOT_LIMITS.maxNodes).toBe(100_000);
    // The array itself is one node, each element another.
    expect(() => snapshot(new Array(99_999).fill(0))).not.toThrow();
    const error = rejection(() => snapshot(new Array(100_000).fill(0)));
    expect(error.rule).toBe("nodes");
    expect(error.path).toBe("$[99999]");
  });

  it("counts object values as nodes, not their keys", () => {
    const object: Record<string, number> = {};
    for (let i = 0; i < 99_999; i++) object[`k${i}`] = i;
    expect(() => snapshot(object)).not.toThrow();
    object.one_more = 1;
    expect(rejection(() => snapshot(object)).rule).toBe("nodes");
  });

  it("counts a shared reference every time it appears (no amplification through aliasing)", () => {
    const block = new Array(1000).fill(0);
    const amplified = new Array(100).fill(block); // 100 * 1001 + 1 nodes
    expect(rejection(() => snapshot(amplified)).rule).toBe("nodes");
  });
});

describe("snapshot: string and total byte caps", () => {
  it("measures UTF-8 bytes exactly as the encoder does, lone surrogates as U+FFFD", () => {
    for (const text of ["", "ascii", "é", "€", "😀", "a😀é€", "\ud800", "x\udc00y", "\ud83d"]) {
      expect(utf8Length(text)).toBe(Buffer.byteLength(text, "utf8"));
    }
  });

  it("allows a string at the default 1 MiB cap and rejects one byte over", () => {
    const cap = DEFAULT_SNAPSHOT_LIMITS.maxStringBytes;
    expect(cap).toBe(1024 * 1024);
    expect(() => snapshot({ s: "a".repeat(cap) })).not.toThrow();
    const error = rejection(() => snapshot({ s: "a".repeat(cap + 1) }));
    expect({ rule: error.rule, path: error.path }).toEqual({ rule: "string_bytes", path: "$.s" });
  });

  it("counts multi-byte characters by bytes, not code units", () => {
    const cap = DEFAULT_SNAPSHOT_LIMITS.maxStringBytes;
    const twoByte = "é".repeat(cap / 2); // exactly at the cap, half as many characters
    expect(() => snapshot(twoByte)).not.toThrow();
    expect(rejection(() => snapshot(`${twoByte}a`)).rule).toBe("string_bytes");
  });

  it("applies a custom string cap to 2-, 3- and 4-byte characters at the limit and one over", () => {
    const limits = { maxStringBytes: 4 };
    expect(() => snapshot("éé", limits)).not.toThrow(); // 4 bytes
    expect(() => snapshot("😀", limits)).not.toThrow(); // 4 bytes, 2 code units
    expect(() => snapshot("€a", limits)).not.toThrow(); // 4 bytes
    expect(rejection(() => snapshot("ééa", limits)).rule).toBe("string_bytes");
    expect(rejection(() => snapshot("😀a", limits)).rule).toBe("string_bytes");
    expect(rejection(() => snapshot("€€", limits)).rule).toBe("string_bytes");
    expect(() => snapshot("abcd", limits)).not.toThrow();
    expect(rejection(() => snapshot("abcde", limits)).rule).toBe("string_bytes");
  });

  it("applies the string cap to object keys, naming the key", () => {
    const error = rejection(() => snapshot({ abcde: 1 }, { maxStringBytes: 4 }));
    expect({ rule: error.rule, path: error.path }).toEqual({
      rule: "string_bytes",
      path: "$.abcde",
    });
  });

  it("allows the default 8 MiB total and rejects one byte over", () => {
    const cap = DEFAULT_SNAPSHOT_LIMITS.maxTotalBytes;
    expect(cap).toBe(8 * 1024 * 1024);
    const mib = "a".repeat(1024 * 1024);
    const atCap = new Array(8).fill(mib);
    expect(() => snapshot(atCap)).not.toThrow();
    const error = rejection(() => snapshot([...atCap, "b"]));
    expect({ rule: error.rule, path: error.path }).toEqual({ rule: "total_bytes", path: "$[8]" });
  });

  it("sums keys and values, in UTF-8 bytes, against a custom total", () => {
    const limits = { maxTotalBytes: 10 };
    expect(() => snapshot({ abc: "defghij" }, limits)).not.toThrow(); // 3 + 7
    expect(rejection(() => snapshot({ abcd: "defghij" }, limits)).rule).toBe("total_bytes");
    expect(() => snapshot({ é: "😀€a" }, limits)).not.toThrow(); // 2 + 4 + 3 + 1
    expect(rejection(() => snapshot({ é: "😀€ab" }, limits)).rule).toBe("total_bytes");
  });

  it("does not count the keys of omitted undefined properties", () => {
    expect(() => snapshot({ abcdefghijk: undefined, a: "b" }, { maxTotalBytes: 2 })).not.toThrow();
  });
});

describe("snapshot: limits", () => {
  it("keeps the defaults for limits passed as undefined", () => {
    const limits = {
      maxDepth: undefined,
      maxNodes: undefined,
      maxStringBytes: undefined,
      maxTotalBytes: undefined,
    };
    expect(rejection(() => snapshot(nestedArrays(65), limits)).rule).toBe("depth");
    expect(rejection(() => snapshot(new Array(100_000).fill(0), limits)).rule).toBe("nodes");
  });

  it("rejects limits that are not positive integers instead of disabling the check", () => {
    for (const bad of [Number.NaN, -1, 1.5, Number.POSITIVE_INFINITY]) {
      expect(() => snapshot({}, { maxDepth: bad })).toThrow(ValidationError);
      expect(() => snapshot("x", { maxStringBytes: bad })).toThrow(ValidationError);
    }
    expect(() => snapshot({}, { maxNodes: Number.NaN })).toThrow(/limits\.maxNodes/);
  });

  it("treats a zero limit as a limit: depth 0 admits scalars only", () => {
    expect(snapshot("x", { maxDepth: 0 })).toBe("x");
    expect(rejection(() => snapshot({}, { maxDepth: 0 })).rule).toBe("depth");
    expect(rejection(() => snapshot("x", { maxTotalBytes: 0 })).rule).toBe("total_bytes");
  });
});

describe("snapshot: errors", () => {
  it("are typed, carry a stable code, and name the path and the rule", () => {
    const error = expectRule(
      { patient: { visits: [{ at: 1 }, { at: Number.NaN }] } },
      "non_finite",
      "$.patient.visits[1].at",
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toBeInstanceOf(AlmaError);
    expect(error.code).toBe("invalid_input");
    expect(error.retryable).toBe(false);
    expect(error.name).toBe("SnapshotError");
    expect(error.message).toContain("$.patient.visits[1].at");
    expect(error.message).toContain("non_finite");
  });
});

describe("snapshotObject", () => {
  it("accepts a plain object and rejects other roots", () => {
    expect(snapshotObject({ a: 1 })).toEqual({ a: 1 });
    for (const root of [null, [], "x", 1, undefined]) {
      const error = rejection(() => snapshotObject(root, "request.input"));
      expect({ rule: error.rule, path: error.path }).toEqual({
        rule: "unsupported_type",
        path: "request.input",
      });
    }
  });

  it("applies the same rules and limits underneath", () => {
    const error = rejection(() => snapshotObject({ a: { b: {} } }, "$", { maxDepth: 2 }));
    expect(error.rule).toBe("depth");
  });
});

describe("canonicalJson", () => {
  it("is independent of key order and stable for equal data", () => {
    const a = snapshot({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: "x" } });
    const b = snapshot({ a: { c: "x", d: [1, { y: 2, z: 1 }] }, b: 1 });
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(canonicalJson(a)).toBe('{"a":{"c":"x","d":[1,{"y":2,"z":1}]},"b":1}');
  });

  it("distinguishes array order and values", () => {
    expect(canonicalJson(snapshot([1, 2]))).not.toBe(canonicalJson(snapshot([2, 1])));
    expect(canonicalJson(snapshot({ a: "1" }))).not.toBe(canonicalJson(snapshot({ a: 1 })));
  });
});
