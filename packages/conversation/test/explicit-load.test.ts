import type { LoadInputContext } from "@alma-harness/conversation";
import { scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { harness } from "./explicit-kit.js";
import { SCOPE } from "./harness.js";

/** A `loadInput` the test resolves by hand, counting its calls and keeping its context. */
function gate() {
  let open!: (value: unknown) => void;
  const state = { calls: 0, context: undefined as LoadInputContext | undefined };
  const value = new Promise<unknown>((resolve) => {
    open = resolve;
  });
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const load = (context: LoadInputContext) => {
    state.calls += 1;
    state.context = context;
    entered();
    return value;
  };
  return { load, open, inside, state };
}

describe("explicit roots: loadInput (seed 002)", () => {
  it("'Admission, root claim and pending final-result reservation precede loadInput, hooks, recall, history and media'", async () => {
    const seen: unknown[] = [];
    let loads = 0;
    const h = harness({
      wrap: (s) => ({
        ...s,
        sessions: new Proxy(s.sessions, {
          get(target, prop) {
            const value = Reflect.get(target, prop);
            if (prop === "load") loads += 1;
            return typeof value === "function" ? value.bind(target) : value;
          },
        }),
      }),
    });
    const view = await h.t.runner.runTurn(
      h.explicit({
        loadInput: async ({ rootKey }) => {
          const holder = await h.t.stores.admissions.holder(SCOPE, "s1");
          const root = await h.t.stores.rootResults.get(SCOPE, rootKey, h.t.clock.now());
          seen.push(holder?.rootKey, holder?.state, root?.state, loads);
          return "When are you open on Monday?";
        },
      }),
    );
    expect(view.status).toBe("completed");
    // Admitted and reserved; the session (history) not yet loaded.
    expect(seen).toEqual(["visit-42", "active", "reserved", 0]);
  });

  it("a store set's durability point commits the claim before loadInput (host code); a failed commit never loads", async () => {
    const order: string[] = [];
    const h = harness({
      wrap: (s) => ({ ...s, barrier: { commit: async () => void order.push("commit") } }),
    });
    const loadInput = () => {
      order.push("load");
      return "When are you open on Monday?";
    };
    expect((await h.t.runner.runTurn(h.explicit({ loadInput }))).status).toBe("completed");
    expect(order.slice(0, 2)).toEqual(["commit", "load"]);
    const failing = harness({
      wrap: (s) => ({
        ...s,
        barrier: { commit: () => Promise.reject(new Error("the commit failed")) },
      }),
    });
    const view = await failing.t.runner.runTurn(failing.explicit());
    expect(view.status).toBe("reconciliation_required");
    expect(failing.t.uncertain.map((u) => [u.cause, u.released])).toEqual([["commit", true]]);
    expect(failing.loads()).toBe(0);
  });

  it("'Busy/replayed requests run nothing': loadInput is never called for busy, in_progress or a replay", async () => {
    const h = harness({ script: [scriptedText("first"), scriptedText("second")] });
    const g = gate();
    const first = h.t.runner.runTurn(h.explicit({ loadInput: g.load }));
    await g.inside;
    const other = h.explicit({ root: h.root({ rootId: "visit-43" }), loadInput: h.loader() });
    expect(await h.t.runner.runTurn(other)).toEqual({
      status: "busy",
      rootKey: "visit-43",
      holder: "visit-42",
    });
    const again = await h.t.runner.runTurn(h.explicit({ loadInput: h.loader() }));
    expect(again).toEqual({ status: "in_progress", rootKey: "visit-42" });
    g.open("When are you open on Monday?");
    const view = await first;
    expect(view.status).toBe("completed");
    const replay = await h.t.runner.runTurn(h.explicit({ loadInput: h.loader() }));
    expect(replay).toEqual({ ...view, replayed: true });
    expect({ gated: g.state.calls, others: h.loads(), model: h.t.model.calls }).toEqual({
      gated: 1,
      others: 0,
      model: 1,
    });
  });

  it("a retry with changed metadata conflicts without calling loadInput", async () => {
    const h = harness();
    expect((await h.t.runner.runTurn(h.explicit())).status).toBe("completed");
    await expect(h.t.runner.runTurn(h.explicit({ trigger: "sms" }))).rejects.toThrow();
    expect(h.loads()).toBe(1);
  });

  const hostile: [string, () => unknown][] = [
    [
      "throws",
      () => {
        throw new Error("the content store is down");
      },
    ],
    ["rejects", () => Promise.reject(new Error("gone"))],
    ["returns nothing", () => undefined],
    ["returns a number", () => 42],
    [
      "returns an assistant message",
      () => ({ role: "assistant", blocks: [{ type: "text", text: "x" }] }),
    ],
    ["returns an unknown block", () => ({ role: "user", blocks: [{ type: "html", html: "<b>" }] })],
    [
      "returns an unknown field",
      () => ({ role: "user", blocks: [{ type: "text", text: "x" }], turn: "t" }),
    ],
    [
      "carries meta.event ('An explicit root's lazy input cannot carry meta.event')",
      () => ({
        role: "user",
        blocks: [{ type: "text", text: "hi" }],
        meta: { event: { id: "msg-1", kind: "input" } },
      }),
    ],
    [
      "carries a turn id ('never accept browser/model identities as authority')",
      () => ({ role: "user", blocks: [{ type: "text", text: "hi" }], meta: { turn: "other" } }),
    ],
    [
      "returns a cycle",
      () => {
        const blocks: unknown[] = [];
        blocks.push(blocks);
        return { role: "user", blocks };
      },
    ],
  ];
  for (const [what, load] of hostile) {
    it(`a loadInput that ${what} ends reconciliation_required (cause input) with the session released`, async () => {
      const h = harness();
      const view = await h.t.runner.runTurn(h.explicit({ loadInput: load }));
      expect(view).toEqual({ status: "reconciliation_required", rootKey: "visit-42" });
      expect(h.t.uncertain).toEqual([
        {
          scope: SCOPE,
          sessionId: "s1",
          rootKey: "visit-42",
          cause: "input",
          persisted: false,
          released: true,
        },
      ]);
      expect(h.t.model.calls).toBe(0);
      expect((await h.t.stores.sessions.load(SCOPE, "s1")).messages).toEqual([]);
      // The session is free, and the root stays uncertain: a retry never loads again.
      expect(await h.t.stores.admissions.holder(SCOPE, "s1")).toBeUndefined();
      const retry = await h.t.runner.runTurn(h.explicit({ loadInput: h.loader() }));
      expect(retry).toEqual({ status: "reconciliation_required", rootKey: "visit-42" });
      expect(h.loads()).toBe(0);
      const next = h.explicit({ root: h.root({ rootId: "visit-43" }) });
      expect((await h.t.runner.runTurn(next)).status).toBe("completed");
    });
  }

  it("a loaded input with a getter or a Proxy inside is refused without running it (cause input)", async () => {
    const h = harness();
    let reads = 0;
    const withGetter = { role: "user" };
    Object.defineProperty(withGetter, "blocks", {
      enumerable: true,
      get: () => {
        reads += 1;
        return [{ type: "text", text: "hi" }];
      },
    });
    const proxied = {
      role: "user",
      blocks: new Proxy([{ type: "text", text: "hi" }], {
        get: (t, p) => {
          reads += 1;
          return Reflect.get(t, p);
        },
        ownKeys: (t) => {
          reads += 1;
          return Reflect.ownKeys(t);
        },
      }),
    };
    const a = await h.t.runner.runTurn(h.explicit({ loadInput: () => withGetter }));
    const b = await h.t.runner.runTurn(
      h.explicit({ root: h.root({ rootId: "visit-43" }), loadInput: () => proxied }),
    );
    expect([a.status, b.status]).toEqual(["reconciliation_required", "reconciliation_required"]);
    expect(h.t.uncertain.map((u) => u.cause)).toEqual(["input", "input"]);
    expect(reads).toBe(0);
  });

  it("limits: a loaded input of maxInputChars runs, one character more ends uncertain (input)", async () => {
    const h = harness();
    const at = await h.t.runner.runTurn(h.explicit({ loadInput: () => "x".repeat(10_000) }));
    expect(at.status).toBe("completed");
    const over = await h.t.runner.runTurn(
      h.explicit({ root: h.root({ rootId: "visit-43" }), loadInput: () => "x".repeat(10_001) }),
    );
    expect(over.status).toBe("reconciliation_required");
    expect(h.t.uncertain.map((u) => u.cause)).toEqual(["input"]);
  });

  it("a loadInput still running at the turn's deadline ends it (cause deadline), the session released", async () => {
    const h = harness();
    const g = gate();
    const deadlineAt = h.t.clock.now() + 30_000;
    const turn = h.t.runner.runTurn(
      h.explicit({ root: h.root({ deadlineAt }), loadInput: g.load }),
    );
    await g.inside;
    h.t.clock.advance(29_999);
    await Promise.resolve();
    expect(g.state.context?.signal.aborted).toBe(false);
    h.t.clock.advance(1);
    expect(await turn).toEqual({ status: "reconciliation_required", rootKey: "visit-42" });
    expect(g.state.context?.signal.aborted).toBe(true);
    expect(h.t.uncertain.map((u) => [u.cause, u.released])).toEqual([["deadline", true]]);
    g.open("late");
    expect(h.t.model.calls).toBe(0);
  });

  it("the caller's signal during loadInput cancels the turn (cause cancelled)", async () => {
    const h = harness();
    const g = gate();
    const control = new AbortController();
    const turn = h.t.runner.runTurn(h.explicit({ loadInput: g.load, signal: control.signal }));
    await g.inside;
    control.abort();
    expect((await turn).status).toBe("reconciliation_required");
    expect(h.t.uncertain.map((u) => [u.cause, u.released])).toEqual([["cancelled", true]]);
  });

  it("a proposed deadline already passed is not admitted, and one millisecond later is", async () => {
    const h = harness();
    const now = h.t.clock.now();
    const passed = await h.t.runner.runTurn(h.explicit({ root: h.root({ deadlineAt: now }) }));
    expect(passed).toEqual({ status: "not_admitted", reason: "deadline" });
    expect(await h.t.runner.read(SCOPE, "visit-42")).toBeNull();
    expect(h.loads()).toBe(0);
    const next = h.explicit({ root: h.root({ rootId: "visit-43", deadlineAt: now + 1 }) });
    const view = await h.t.runner.runTurn(next);
    // Admitted with one millisecond: the turn's deadline ends it before any call.
    expect(view.status).toBe("reconciliation_required");
    expect(h.loads()).toBe(1);
  });

  it("a proposed deadline later than runTimeoutMs allows is cut to the runner's timeout", async () => {
    const h = harness();
    const g = gate();
    const far = h.t.clock.now() + 3_600_000;
    const turn = h.t.runner.runTurn(
      h.explicit({ root: h.root({ deadlineAt: far }), loadInput: g.load }),
    );
    await g.inside;
    h.t.clock.advance(120_000);
    expect((await turn).status).toBe("reconciliation_required");
    expect(h.t.uncertain.map((u) => u.cause)).toEqual(["deadline"]);
  });

  it("streamTurn takes the explicit form: its rootKey is the root id and its result the same view", async () => {
    const h = harness();
    const stream = h.t.runner.streamTurn(h.explicit());
    expect(stream.rootKey).toBe("visit-42");
    const events: string[] = [];
    for await (const event of stream) events.push(event.type);
    const view = await stream.result;
    expect(view.status).toBe("completed");
    expect(events.at(-1)).toBe("result");
    expect(h.loads()).toBe(1);
  });
});
