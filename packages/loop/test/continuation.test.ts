import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  type Continuation,
  ContinuationError,
  readContinuation,
  referToOutputs,
  type StoredContinuation,
  type StoredOutput,
} from "@alma-harness/loop";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness } from "./harness.js";

/** A writer that keeps what it is given, as a durable store would: a JSON copy. */
function recorder(fail?: (c: Continuation, n: number) => boolean) {
  const written: Continuation[] = [];
  return {
    written,
    write(c: Continuation) {
      if (fail?.(c, written.length)) throw new Error("the store is down");
      written.push(JSON.parse(JSON.stringify(c)) as Continuation);
    },
  };
}

const W2 = [
  scriptedToolCall({ id: "c1", name: "echo", input: { text: "hi" } }, { text: "Looking." }),
  scriptedText("Done."),
];

describe("the continuation at each step boundary (issue 25)", () => {
  it("a tool turn hands one record per boundary: its tools, the next step, the ending", async () => {
    const writer = recorder();
    const h = harness({ tools: [echoTool], script: W2, continuations: writer });
    const result = completed(await h.run());
    expect(result.reply).toEqual([{ type: "text", text: "Done." }]);
    const [tools, next, end] = writer.written;
    expect(writer.written).toHaveLength(3);
    expect(tools?.next).toEqual({
      kind: "run_tools",
      step: 1,
      last: null,
      calls: [{ id: "c1", name: "echo", arguments: '{"text":"hi"}', state: "requested" }],
    });
    expect(tools?.messages.map((m) => m.message.role)).toEqual(["user", "assistant"]);
    expect(tools?.counters.callsUsed).toBe(1);
    expect(tools?.reservations.receipts).toHaveLength(1);
    expect(next?.next).toEqual({ kind: "call_model" });
    expect(next?.messages.map((m) => m.message.role)).toEqual(["user", "assistant", "user"]);
    expect(next?.toolCalls).toEqual([
      { id: "c1", name: "echo", input: { text: "hi" }, isError: false },
    ]);
    expect(end?.next).toEqual({ kind: "finish", terminalReason: "answered" });
    expect(end?.step).toBe(2);
    expect(end?.counters.callsUsed).toBe(2);
    expect(end?.reservations.spentMicros).toBe(result.costMicros);
    expect(end?.root).toEqual({
      scope: { org: "clinic-a", uid: "patient-1" },
      sessionId: "s1",
      rootKey: "root-1",
      turnId: "turn-1",
    });
    // Every record a turn writes reads back as itself.
    for (const c of writer.written) expect(readContinuation(c)).toEqual(c);
  });

  it("a writer that fails makes the turn uncertain, and no later call is sent", async () => {
    const writer = recorder((_, n) => n === 0);
    const h = harness({ tools: [echoTool], script: W2, continuations: writer });
    const outcome = await h.run();
    expect(outcome.status).toBe("reconciliation_required");
    if (outcome.status === "reconciliation_required") expect(outcome.cause).toBe("continuation");
    // The first step settled; the tool never ran and the second step was never sent.
    expect(h.model.calls).toBe(1);
    expect(h.trail("lifecycle").some((r) => r.action === "tool.call")).toBe(false);
  });

  it("without a writer nothing is built and the turn is the same", async () => {
    const h = harness({ tools: [echoTool], script: W2 });
    expect(completed(await h.run()).reply).toEqual([{ type: "text", text: "Done." }]);
  });

  it("a limit's ending is recorded with its terminal reason", async () => {
    const writer = recorder();
    const h = harness({
      tools: [echoTool],
      limits: { maxCalls: 1 },
      script: [scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } })],
      continuations: writer,
    });
    expect(completed(await h.run()).terminalReason).toBe("call_limit");
    expect(writer.written.at(-1)?.next).toEqual({ kind: "finish", terminalReason: "call_limit" });
    expect(writer.written[0]?.next).toMatchObject({ kind: "run_tools", last: "call" });
  });
});

describe("readContinuation refuses what it cannot read, naming where", () => {
  const good = (): Record<string, unknown> =>
    JSON.parse(readFileSync(corpus()[0] as string, "utf8"));
  const refused = (raw: unknown): ContinuationError => {
    try {
      readContinuation(raw);
    } catch (error) {
      expect(error).toBeInstanceOf(ContinuationError);
      return error as ContinuationError;
    }
    throw new Error("read a record it should refuse");
  };

  it("an unknown version, older or newer or not a number", () => {
    for (const version of [0, 3, "1", "2", null]) {
      expect(refused({ ...good(), version }).path).toBe("continuation.version");
    }
  });

  it("a field it does not know, at the top and inside", () => {
    expect(refused({ ...good(), extra: 1 }).path).toBe("continuation.extra");
    const c = good();
    (c.counters as Record<string, unknown>).hidden = 3;
    expect(refused(c).path).toBe("continuation.counters.hidden");
  });

  it("a tool step with no calls, a call in a state version 1 does not have, a bad message", () => {
    const noCalls = good();
    noCalls.next = { kind: "run_tools", step: 1, last: null, calls: [] };
    expect(refused(noCalls).path).toBe("continuation.next.calls");
    const asked = good();
    asked.next = {
      kind: "run_tools",
      step: 1,
      last: null,
      calls: [{ id: "c1", name: "echo", arguments: "{}", state: "running" }],
    };
    expect(refused(asked).path).toBe("continuation.next.calls[0].state");
    const badMessage = good();
    badMessage.messages = [{ ref: "inline", message: { role: "system", blocks: [] } }];
    expect(refused(badMessage).message).toMatch(/role/);
    const badRef = good();
    badRef.messages = [{ ref: "stored", message: good().messages }];
    expect(refused(badRef).path).toBe("continuation.messages[0].ref");
    // Version 1 has no references.
    const v1Ref = good();
    v1Ref.messages = [{ ref: "output", digest: "0".repeat(64) }];
    expect(refused(v1Ref).path).toBe("continuation.messages[0].ref");
  });

  it("a version-2 reference to an output not given, or to one whose message does not match it", () => {
    const { record, outputs } = stored(corpus(2).find((f) => f.includes("w2-2")) as string);
    const read = (given: readonly StoredOutput[]) => {
      try {
        readContinuation(record, given);
      } catch (error) {
        expect(error).toBeInstanceOf(ContinuationError);
        return error as ContinuationError;
      }
      throw new Error("read a record it should refuse");
    };
    expect(read([]).path).toBe("continuation.messages[0].digest");
    expect(read(outputs.slice(1)).path).toBe("continuation.messages[0].digest");
    const forged = outputs.map((o, i) =>
      i === 1
        ? { ...o, message: { role: "assistant", blocks: [{ type: "text", text: "Sure." }] } }
        : o,
    );
    expect(read(forged).message).toMatch(/does not match/);
    const open = { ...record, messages: [{ ref: "output", digest: outputs[0]?.digest, x: 1 }] };
    expect(() => readContinuation(open, outputs)).toThrow(ContinuationError);
  });

  it("reads a record past the default snapshot bound (a full session batch) and refuses one over its own", () => {
    const withText = (count: number) => {
      const c = good();
      const text = "x".repeat(1024 * 1024 - 64);
      c.messages = Array.from({ length: count }, () => ({
        ref: "inline",
        message: { role: "user", blocks: [{ type: "text", text }] },
      }));
      return c;
    };
    // 9 MiB: over the 8 MiB a plain snapshot takes, under the continuation's 16 MiB.
    expect(readContinuation(withText(9)).messages).toHaveLength(9);
    expect(refused(withText(17)).message).toMatch(/bytes|large|limit/i);
    // One string over a message's own bound.
    const long = withText(1);
    (long.messages as { message: { blocks: { text: string }[] } }[])[0]!.message.blocks[0]!.text =
      "x".repeat(1024 * 1024 + 1);
    refused(long);
  });

  it("hostile shapes: an accessor, a cycle, a negative counter", () => {
    const accessor = good();
    Object.defineProperty(accessor, "step", { get: () => 1, enumerable: true });
    refused(accessor);
    const cycle = good();
    cycle.grants = [cycle];
    refused(cycle);
    const negative = good();
    (negative.counters as Record<string, unknown>).callsUsed = -1;
    expect(refused(negative).path).toBe("continuation.counters.callsUsed");
  });
});

/** The committed records of a version, as turns of this engine wrote them (see the corpus README). */
function corpus(version = 1): string[] {
  const dir = join(import.meta.dirname, "continuations", `v${version}`);
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => join(dir, f));
}

/** A version-2 corpus file: what a store held at that boundary. */
function stored(file: string): {
  readonly record: StoredContinuation;
  readonly outputs: readonly StoredOutput[];
} {
  return JSON.parse(readFileSync(file, "utf8"));
}

describe("the corpora: every later version reads every record", () => {
  it("hold records of every kind of boundary", () => {
    for (const version of [1, 2]) {
      const records = corpus(version).map((f) => {
        const raw = JSON.parse(readFileSync(f, "utf8"));
        return (version === 1 ? raw : raw.record) as Continuation;
      });
      const kinds = new Set(records.map((c) => c.next.kind));
      expect([...kinds].sort()).toEqual(["call_model", "finish", "run_tools"]);
      const states = new Set(
        records.flatMap((c) =>
          c.next.kind === "run_tools" ? c.next.calls.map((x) => x.state) : [],
        ),
      );
      expect([...states].sort()).toEqual(["asked", "done", "requested"]);
    }
  });

  for (const file of corpus(1)) {
    it(`reads v1/${file.split("/").at(-1)}: the same turn, in the current version`, () => {
      const raw = JSON.parse(readFileSync(file, "utf8")) as Continuation;
      expect(raw.version as number).toBe(1);
      const read = readContinuation(raw);
      expect({ ...read, version: 1 }).toEqual(raw);
    });
  }

  for (const file of corpus(2)) {
    it(`reads v2/${file.split("/").at(-1)}: every message from the outputs it refers to`, () => {
      const { record, outputs } = stored(file);
      expect(record.version).toBe(2);
      expect(record.messages.every((m) => m.ref === "output")).toBe(true);
      const read = readContinuation(record, outputs);
      expect(read.messages).toHaveLength(record.messages.length);
      // Written again, the record refers to the same outputs, and nothing is new to store.
      const again = referToOutputs(read, new Set(outputs.map((o) => o.digest)));
      expect(again.record).toEqual(record);
      expect(again.outputs).toEqual([]);
    });
  }
});

describe("a record as a store keeps it (version 2)", () => {
  it("each boundary adds only its new messages; the stored record reads back as the turn wrote it", async () => {
    const writer = recorder();
    const h = harness({ tools: [echoTool], script: W2, continuations: writer });
    completed(await h.run());
    const held = new Map<string, StoredOutput>();
    const added: number[] = [];
    for (const c of writer.written) {
      const { record, outputs } = referToOutputs(c, new Set(held.keys()));
      added.push(outputs.length);
      for (const o of outputs) held.set(o.digest, JSON.parse(JSON.stringify(o)));
      // Through JSON, as a store returns it.
      const back = readContinuation(JSON.parse(JSON.stringify(record)), [...held.values()]);
      expect(back).toEqual(c);
    }
    // The input and the first answer, then the tool result, then the last answer's step adds none
    // (a finish records no new message before the ending).
    expect(added).toEqual([2, 1, 1]);
  });
});

describe("a dead run goes on from its last boundary in another engine (issue 25)", () => {
  it("from a call_model boundary: the tools that ran keep their results and only the next call is sent", async () => {
    const writer = recorder();
    const one = harness({ tools: [echoTool], script: W2, continuations: writer });
    completed(await one.run());
    const [, next] = writer.written;
    expect(next?.next).toEqual({ kind: "call_model" });
    // Another process, with the record the dead one left; the same root, a new run.
    const two = harness({ tools: [echoTool], script: [scriptedText("Done again.")] });
    const outcome = await two.engine.resumeTurn(two.input(), next, {});
    const result = completed(outcome);
    expect(result.reply).toEqual([{ type: "text", text: "Done again." }]);
    expect(two.model.calls).toBe(1);
    expect(result.toolCalls).toEqual([
      { id: "c1", name: "echo", input: { text: "hi" }, isError: false },
    ]);
    expect(two.trail("lifecycle").map((e) => e.action)).toContain("turn.resumed");
  });

  it("from a run_tools boundary: the step's requested calls run, then the next call", async () => {
    const writer = recorder();
    const one = harness({ tools: [echoTool], script: W2, continuations: writer });
    completed(await one.run());
    const [tools] = writer.written;
    const two = harness({ tools: [echoTool], script: [scriptedText("Done.")] });
    const result = completed(await two.engine.resumeTurn(two.input(), tools, {}));
    expect(result.toolCalls.map((c) => c.name)).toEqual(["echo"]);
    expect(two.model.calls).toBe(1);
  });

  it("a finish boundary, or decisions for a turn parked on nothing, are refused before anything runs", async () => {
    const writer = recorder();
    const one = harness({ tools: [echoTool], script: W2, continuations: writer });
    completed(await one.run());
    const [, next, end] = writer.written;
    const two = harness({ tools: [echoTool], script: [scriptedText("x")] });
    const input = two.input();
    await expect(two.engine.resumeTurn(input, end, {})).rejects.toMatchObject({
      code: "invalid_input",
      path: "continuation.next",
    });
    await expect(
      two.engine.resumeTurn(input, next, {
        [`ask_${"0".repeat(32)}`]: { allowed: true, by: "operator" },
      }),
    ).rejects.toMatchObject({ path: "decisions" });
    expect(two.model.calls).toBe(0);
  });
});
