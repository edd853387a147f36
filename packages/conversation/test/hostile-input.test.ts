import type { ConversationRunner, RunTurnRequest } from "@alma-harness/conversation";
import { SnapshotError, type SnapshotRule, ValidationError } from "@alma-harness/core";
import { scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { SCOPE, setup } from "./harness.js";

/**
 * Every hostile shape of a request is a typed rejection (`ValidationError`, a `SnapshotError` where
 * the shape is not data), before anything is admitted, and no accessor or Proxy trap runs. Each
 * shape is tried through `runTurn` and `streamTurn`.
 */

/** Counts every accessor and trap a shape could run; each also throws, so a run cannot hide. */
function hostile() {
  let runs = 0;
  const getter = (value: unknown) => ({
    enumerable: true,
    configurable: true,
    get: () => {
      runs += 1;
      return value;
    },
  });
  const trap = () => {
    runs += 1;
    throw new Error("trap ran");
  };
  return { runs: () => runs, getter, trap };
}

type Base = Record<string, unknown>;
type Shape = {
  readonly name: string;
  readonly rule: SnapshotRule | string;
  readonly build: (base: Base, h: ReturnType<typeof hostile>) => unknown;
};

const message = (blocks: unknown[]) => ({ role: "user", blocks });
const nestedArrays = (levels: number): unknown => {
  let value: unknown = [];
  for (let i = 1; i < levels; i++) value = [value];
  return value;
};

const SHAPES: readonly Shape[] = [
  {
    name: "a getter on the request's own input",
    rule: "accessor",
    build: (b, h) => Object.defineProperty({ ...b, input: undefined }, "input", h.getter("hi")),
  },
  {
    name: "a getter on the request's own sessionId",
    rule: "accessor",
    build: (b, h) =>
      Object.defineProperty({ ...b, sessionId: undefined }, "sessionId", h.getter("s1")),
  },
  {
    name: "a getter on the request's own signal",
    rule: "accessor",
    build: (b, h) =>
      Object.defineProperty({ ...b }, "signal", h.getter(new AbortController().signal)),
  },
  {
    name: "a getter nested in a block",
    rule: "accessor",
    build: (b, h) => ({
      ...b,
      input: message([Object.defineProperty({ type: "text" }, "text", h.getter("hi"))]),
    }),
  },
  {
    name: "a Proxy request whose get trap throws",
    rule: "proxy",
    build: (b, h) => new Proxy({ ...b }, { get: h.trap }),
  },
  {
    name: "a Proxy request whose ownKeys trap throws",
    rule: "proxy",
    build: (b, h) => new Proxy({ ...b }, { ownKeys: h.trap }),
  },
  {
    name: "a Proxy request whose getOwnPropertyDescriptor trap throws",
    rule: "proxy",
    build: (b, h) => new Proxy({ ...b }, { getOwnPropertyDescriptor: h.trap }),
  },
  {
    name: "a Proxy input whose traps all throw",
    rule: "proxy",
    build: (b, h) => ({
      ...b,
      input: new Proxy(message([{ type: "text", text: "hi" }]), {
        get: h.trap,
        ownKeys: h.trap,
        getOwnPropertyDescriptor: h.trap,
        getPrototypeOf: h.trap,
      }),
    }),
  },
  {
    name: "a Proxy block nested in an array",
    rule: "proxy",
    build: (b, h) => ({
      ...b,
      input: message([
        new Proxy({ type: "text", text: "hi" }, { getOwnPropertyDescriptor: h.trap }),
      ]),
    }),
  },
  {
    name: "a Proxy scope",
    rule: "invalid_scope",
    build: (b, h) => ({
      ...b,
      scope: new Proxy({ ...SCOPE }, { ownKeys: h.trap, getOwnPropertyDescriptor: h.trap }),
    }),
  },
  {
    name: "a symbol key on the request",
    rule: "symbol_key",
    build: (b) => ({ ...b, [Symbol("x")]: 1 }),
  },
  {
    name: "a symbol key in the input",
    rule: "symbol_key",
    build: (b) => ({
      ...b,
      input: { ...message([{ type: "text", text: "hi" }]), [Symbol("x")]: 1 },
    }),
  },
  {
    name: "a non-enumerable key on the request",
    rule: "hidden_property",
    build: (b) => Object.defineProperty({ ...b }, "trigger", { value: "t", enumerable: false }),
  },
  {
    name: "a non-enumerable key in a block",
    rule: "hidden_property",
    build: (b) => ({
      ...b,
      input: message([
        Object.defineProperty({ type: "text", text: "hi" }, "extra", {
          value: 1,
          enumerable: false,
        }),
      ]),
    }),
  },
  {
    name: "an own __proto__ key on the request",
    rule: "unknown_field",
    build: (b) => ({ ...b, ...JSON.parse('{"__proto__": {"polluted": true}}') }),
  },
  {
    name: "an own constructor key on the request",
    rule: "unknown_field",
    build: (b) => ({ ...b, constructor: { prototype: { polluted: true } } }),
  },
  {
    name: "an own __proto__ key in the input",
    rule: "unknown_field",
    build: (b) => ({
      ...b,
      input: {
        ...message([{ type: "text", text: "hi" }]),
        ...JSON.parse('{"__proto__": {"polluted": true}}'),
      },
    }),
  },
  {
    name: "a class instance as the request",
    rule: "non_plain",
    build: (b) => Object.assign(Object.create({ inherited: 1 }), b),
  },
  {
    name: "a cycle in the input",
    rule: "cycle",
    build: (b) => {
      const input: Record<string, unknown> = message([{ type: "text", text: "hi" }]);
      input.meta = { event: input };
      return { ...b, input };
    },
  },
  // The request's copy is one level; 63 nested arrays under `input` reach the depth limit (64) exactly.
  {
    name: "input nested at the depth limit (a shape error, not a depth one)",
    rule: "message",
    build: (b) => ({ ...b, input: nestedArrays(63) }),
  },
  {
    name: "input nested one over the depth limit",
    rule: "depth",
    build: (b) => ({ ...b, input: nestedArrays(64) }),
  },
  {
    name: "text one over maxInputChars",
    rule: "max_input_chars",
    build: (b) => ({ ...b, input: "x".repeat(10_001) }),
  },
];

/** The error an entry point gives for `request` (streamTurn throws at the call, before any await). */
async function rejection(
  runner: ConversationRunner,
  entry: "runTurn" | "streamTurn",
  request: unknown,
): Promise<unknown> {
  try {
    if (entry === "runTurn") await runner.runTurn(request as RunTurnRequest);
    else await runner.streamTurn(request as RunTurnRequest).result;
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("hostile request input is a typed rejection, and no accessor runs", () => {
  for (const entry of ["runTurn", "streamTurn"] as const) {
    for (const shape of SHAPES) {
      it(`${entry}: ${shape.name}`, async () => {
        const t = setup();
        const h = hostile();
        const request = shape.build(t.request("k1"), h);
        const error = await rejection(t.runner, entry, request);
        expect(error).toBeInstanceOf(Error);
        const typed = error as ValidationError & { code: string };
        // A scope is the host's and has its own typed error; everything else is a ValidationError.
        if (shape.rule === "invalid_scope") expect(typed.code).toBe("invalid_scope");
        else {
          expect(error).toBeInstanceOf(ValidationError);
          expect(typed.rule).toBe(shape.rule);
        }
        expect(h.runs()).toBe(0);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        expect(await t.stores.admissions.holder(SCOPE, "s1")).toBeUndefined();
      });
    }
  }

  it("names what is expected, never the unknown field that was sent", async () => {
    const t = setup();
    const sent = { ...t.request("k1"), field_5551234567: 1 };
    const error = (await rejection(t.runner, "runTurn", sent)) as ValidationError;
    expect(error).toBeInstanceOf(ValidationError);
    expect(`${error.message} ${error.path}`).not.toContain("5551234567");
    const nested = (await rejection(t.runner, "runTurn", {
      ...t.request("k1"),
      input: { ...message([{ type: "text", text: "hi" }]), field_5551234567: 1 },
    })) as ValidationError;
    expect(nested.rule).toBe("unknown_field");
    expect(`${nested.message} ${nested.path}`).not.toContain("5551234567");
  });

  it("a rejection from a hostile shape is a SnapshotError carrying the rule", async () => {
    const t = setup();
    const error = await rejection(t.runner, "runTurn", new Proxy(t.request("k1"), {}));
    expect(error).toBeInstanceOf(SnapshotError);
  });

  it("accepts text at maxInputChars exactly, through the same reading", async () => {
    const t = setup({ script: [scriptedText("ok"), scriptedText("ok")] });
    expect((await t.runner.runTurn({ ...t.request("k1"), input: "x".repeat(10_000) })).status).toBe(
      "completed",
    );
    const stream = t.runner.streamTurn({ ...t.request("k2"), input: "y".repeat(10_000) });
    expect((await stream.result).status).toBe("completed");
  });

  it("takes a data-property signal and uses it (the one read of the field)", async () => {
    const t = setup({ script: [scriptedText("ok")] });
    const controller = new AbortController();
    controller.abort();
    const view = await t.runner.runTurn({ ...t.request("k1"), signal: controller.signal });
    expect(view.status).not.toBe("completed");
    const error = await rejection(t.runner, "runTurn", {
      ...t.request("k2"),
      signal: { aborted: false },
    });
    expect((error as ValidationError).rule).toBe("abort_signal");
  });
});
