import {
  type JsonSchema,
  ProviderError,
  SnapshotError,
  StoreUnavailableError,
  ValidationError,
} from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import { inMemoryStores } from "@alma-harness/core/memory";
import { FakeModelClient, scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import {
  createGovernedStepRunner,
  StepCallInProgressError,
  type StepRequest,
  StepRunnerConfigError,
} from "../src/index.js";
import { normalizeStep, stepBinding } from "../src/request.js";

const SCHEMA: JsonSchema = {
  type: "object",
  properties: { label: { type: "string" } },
  required: ["label"],
  additionalProperties: false,
};
const base: StepRequest = {
  scope: { org: "o1", uid: "u1" },
  idempotencyKey: "k1",
  intent: { tier: "fast", sensitivity: "internal" },
  prompt: "Label this.",
  output: { name: "label", schema: SCHEMA },
};
const step = (over: Record<string, unknown>, maxInputChars = 1000) =>
  normalizeStep({ ...base, ...over } as StepRequest, maxInputChars);

function runner(client: FakeModelClient, over: Record<string, unknown> = {}) {
  return createGovernedStepRunner({
    stores: inMemoryStores(),
    clients: [client],
    policy: {
      resolve: () => ({ clientId: client.id, model: "m", maxOutputTokens: 64, cache: false }),
    },
    prices: { version: "p1", models: { m: { rates: { input: 1, output: 1 } } } },
    policyVersion: "p1",
    configRevision: "r1",
    resultRetentionMs: 60_000,
    ...over,
  });
}

describe("a step request is validated and copied before any I/O", () => {
  it("refuses unknown fields, both or neither of prompt and messages, and a last message that is not the user's", () => {
    expect(() => step({ extra: 1 })).toThrow(ValidationError);
    expect(() => step({ messages: [{ role: "user", text: "x" }] })).toThrow(
      /exactly one of prompt and messages/,
    );
    expect(() => step({ prompt: undefined })).toThrow(/exactly one of prompt and messages/);
    expect(() =>
      step({
        prompt: undefined,
        messages: [
          { role: "user", text: "a" },
          { role: "assistant", text: "b" },
        ],
      }),
    ).toThrow(/last message/);
    expect(() =>
      step({ prompt: undefined, messages: [{ role: "user", text: "a", blocks: [] }] }),
    ).toThrow(ValidationError);
    expect(() => step({ prompt: undefined, messages: [{ role: "system", text: "a" }] })).toThrow(
      ValidationError,
    );
  });

  it("reads no getter and refuses a Proxy, a cycle and a symbol key", () => {
    let read = 0;
    const hostile = {
      ...base,
      get prompt() {
        read += 1;
        return "x";
      },
    };
    expect(() => normalizeStep(hostile as StepRequest, 1000)).toThrow(SnapshotError);
    expect(read).toBe(0);
    expect(() => normalizeStep(new Proxy({ ...base }, {}) as StepRequest, 1000)).toThrow(
      SnapshotError,
    );
    const cyclic: Record<string, unknown> = { type: "object" };
    cyclic.self = cyclic;
    expect(() => step({ output: { name: "x", schema: cyclic } })).toThrow(SnapshotError);
    expect(() => step({ [Symbol("s")]: 1 })).toThrow(SnapshotError);
  });

  it("holds the text to maxInputChars: at the limit accepted, one over refused", () => {
    expect(() => step({ prompt: "a".repeat(100) }, 100)).not.toThrow();
    expect(() => step({ prompt: "a".repeat(101) }, 100)).toThrow(
      expect.objectContaining({ rule: "max_input_chars" }),
    );
    expect(() => step({ prompt: "a".repeat(60), system: "b".repeat(41) }, 100)).toThrow(
      expect.objectContaining({ rule: "max_input_chars" }),
    );
  });

  it("compiles the output schema with the project's validator: an object schema only, a valid name", () => {
    expect(() => step({ output: { name: "x", schema: { type: "string" } } })).toThrow(
      expect.objectContaining({ path: "output.schema", rule: "json_schema" }),
    );
    expect(() =>
      step({
        output: { name: "x", schema: { type: "object", properties: { a: { type: "nonsense" } } } },
      }),
    ).toThrow(expect.objectContaining({ rule: "json_schema" }));
    expect(() => step({ output: { name: "bad name", schema: SCHEMA } })).toThrow(
      expect.objectContaining({ path: "output.name" }),
    );
    expect(step({}).compiled.check({ label: "x" })).toBeUndefined();
    expect(step({}).compiled.check({ label: 1 })).toBe("/label must be string");
  });

  it("checks the tool choice against the advertised tools and the temperature at 0..2", () => {
    const tool = { name: "capture", description: "d", inputSchema: SCHEMA };
    expect(
      step({ tools: [tool], toolChoice: { type: "tool", name: "capture" } }).toolChoice,
    ).toEqual({ type: "tool", name: "capture" });
    expect(() => step({ tools: [tool], toolChoice: { type: "tool", name: "other" } })).toThrow(
      expect.objectContaining({ path: "toolChoice.name", rule: "missing" }),
    );
    expect(() => step({ tools: [tool, tool] })).toThrow(
      expect.objectContaining({ rule: "duplicate" }),
    );
    expect(() => step({ toolChoice: { type: "any" } })).toThrow(ValidationError);
    expect(() => step({ toolChoice: { type: "auto", extra: 1 } })).toThrow(ValidationError);
    expect(step({ temperature: 0 }).temperature).toBe(0);
    expect(Object.is(step({ temperature: -0 }).temperature, 0)).toBe(true);
    expect(step({ temperature: 2 }).temperature).toBe(2);
    expect(() => step({ temperature: 2.01 })).toThrow(expect.objectContaining({ rule: "range" }));
    expect(() => step({ maxOutputTokens: 0 })).toThrow(
      expect.objectContaining({ rule: "positive_integer" }),
    );
  });

  it("binds everything the request says and the configuration revision; absent toolChoice differs from auto", () => {
    const plain = stepBinding(step({}), "r1");
    expect(stepBinding(step({}), "r1")).toBe(plain);
    expect(stepBinding(step({}), "r2")).not.toBe(plain);
    expect(stepBinding(step({ toolChoice: { type: "auto" } }), "r1")).not.toBe(plain);
    expect(stepBinding(step({ temperature: 1 }), "r1")).not.toBe(plain);
    expect(stepBinding(step({ sessionId: "s1" }), "r1")).not.toBe(plain);
  });
});

describe("createGovernedStepRunner", () => {
  it("refuses a configuration it cannot honor, synchronously", () => {
    const client = new FakeModelClient([]);
    expect(() => runner(client, { clients: [] })).toThrow(StepRunnerConfigError);
    expect(() => runner(client, { clients: [client, client] })).toThrow(StepRunnerConfigError);
    expect(() => runner(client, { resultRetentionMs: 0 })).toThrow(StepRunnerConfigError);
    expect(() => runner(client, { configRevision: "has space" })).toThrow(StepRunnerConfigError);
    expect(() => runner(client, { caps: { perTurnUsd: -1 } })).toThrow();
  });

  it("rejects an adapter's refusal (validate) before anything is durable, and sends nothing", async () => {
    const stores = inMemoryStores();
    const client = new FakeModelClient([scriptedText('{"label":"x"}')], {
      validate: () => {
        throw new ProviderError("native JSON schema output is not supported", {
          kind: "unsupported",
          provider: "fake",
        });
      },
    });
    const steps = runner(client, { stores });
    await expect(steps.run(base)).rejects.toMatchObject({ code: "provider_unsupported" });
    expect(client.calls).toBe(0);
    expect((await stores.audit.query(base.scope)).items).toEqual([]);
  });

  it("reads the answer: an empty answer, a refusal and a cut answer are invalid with their receipts", async () => {
    const client = new FakeModelClient([
      scriptedText(""),
      scriptedText("", { stopReason: "refusal" }),
      scriptedText('{"label":', { stopReason: "max_tokens" }),
      scriptedText('{"label":"' + "x".repeat(200) + '"}'),
    ]);
    const steps = runner(client, { maxResultChars: 2_100 });
    expect(await steps.run({ ...base, idempotencyKey: "a" })).toMatchObject({
      status: "invalid",
      reason: "empty",
      receipt: { kind: "single" },
    });
    expect(await steps.run({ ...base, idempotencyKey: "b" })).toMatchObject({
      status: "invalid",
      reason: "refusal",
      refusal: "unspecified",
    });
    expect(await steps.run({ ...base, idempotencyKey: "c" })).toMatchObject({
      status: "invalid",
      reason: "max_tokens",
    });
    expect(await steps.run({ ...base, idempotencyKey: "d" })).toMatchObject({
      status: "invalid",
      reason: "output_chars",
    });
    expect(client.calls).toBe(4);
  });
});

describe("stored envelopes", () => {
  it("an unknown or malformed envelope is not replayed as a result: the key answers reconciliation_required, never re-sent", async () => {
    const stores = inMemoryStores();
    const client = new FakeModelClient([scriptedText('{"label":"x"}')]);
    const steps = runner(client, { stores });
    const first = await steps.run(base);
    expect(first.status).toBe("completed");
    const { resultOf } = await import("../src/outcome.js");
    expect(resultOf("op", { v: 2, status: "completed" })).toBeUndefined();
    expect(
      resultOf("op", { v: 1, status: "completed", object: {}, receipt: { usdMicros: -1 } }),
    ).toBeUndefined();
    expect(resultOf("op", null)).toBeUndefined();
    expect(client.calls).toBe(1);
  });
});

describe("a key whose first caller failed before its claim", () => {
  it("is in progress within the dispatch deadline, then reconciliation_required: never sent under that key", async () => {
    const stores = inMemoryStores();
    const clock = new ManualClock();
    const client = new FakeModelClient([scriptedText('{"label":"x"}')]);
    let failClaim = true;
    const journal = new Proxy(stores.journal, {
      get: (target, prop) => {
        const value = Reflect.get(target, prop, target);
        if (prop === "claim") {
          return async (...args: unknown[]) => {
            if (failClaim) throw new StoreUnavailableError("journal down");
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const steps = runner(client, {
      stores: { ...stores, journal },
      clock,
      dispatchDeadlineMs: 60_000,
      resultRetentionMs: 3_600_000,
    });
    expect(await steps.run(base)).toMatchObject({
      status: "reconciliation_required",
      cause: "call:single:error",
    });
    failClaim = false;
    await expect(steps.run(base)).rejects.toBeInstanceOf(StepCallInProgressError);
    clock.advance(60_000);
    expect(await steps.run(base)).toMatchObject({
      status: "reconciliation_required",
      cause: "result_store",
      replayed: true,
    });
    expect(client.calls).toBe(0);
  });
});
