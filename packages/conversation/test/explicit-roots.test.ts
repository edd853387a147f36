import { createHash } from "node:crypto";
import {
  ConversationConflictError,
  conversationRootKey,
  createConversationDescriptor,
  type ExplicitTurnRequest,
} from "@alma-harness/conversation";
import { ValidationError } from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { harness, INTENT, refused, SETTINGS } from "./explicit-kit.js";
import { SCOPE } from "./harness.js";

describe("explicit roots: the closed request descriptor (seed 002)", () => {
  it("completes a turn whose id is the host's root id: 'The root ID is the turn ID'", async () => {
    const h = harness();
    const view = await h.t.runner.runTurn(h.explicit());
    expect(view.status).toBe("completed");
    if (view.status !== "completed") return;
    expect(view.rootKey).toBe("visit-42");
    expect(view.result.turnId).toBe("visit-42");
    expect(view.result.reply).toEqual([{ type: "text", text: "We open at nine." }]);
    // "only the runner allocates child slots, IDs and parents": every receipt is under the root.
    expect(view.result.receipts.every((r) => r.turnId === "visit-42")).toBe(true);
    const log = (await h.t.stores.sessions.load(SCOPE, "s1")).messages;
    expect(log.map((m) => m.meta?.turn)).toEqual(["visit-42", "visit-42"]);
    expect(log[0]?.blocks).toEqual([{ type: "text", text: "When are you open on Monday?" }]);
    expect(await h.t.runner.read(SCOPE, "visit-42")).toEqual({ ...view, replayed: true });
    expect(h.loads()).toBe(1);
  });

  it("refuses a descriptor with an unknown field (a parent, a turn id) before any I/O", async () => {
    const h = harness();
    for (const field of ["parentId", "turnId", "childSlot", "rootKey"])
      await refused(h, h.explicit({ root: h.root({ [field]: "x" } as never) }), "unknown_field");
    await refused(h, { ...h.explicit(), input: "inline too" }, "unknown_field");
  });

  it("refuses a missing field, both identities or none, and a version other than 1", async () => {
    const h = harness();
    const { deadlineAt: _d, ...noDeadline } = h.root();
    await refused(h, h.explicit({ root: noDeadline as never }), "required");
    await refused(h, h.explicit({ root: h.root({ idempotencyKey: "k1" }) }), "identity");
    await refused(h, h.explicit({ root: h.root({ rootId: undefined }) }), "identity");
    await refused(h, h.explicit({ root: h.root({ version: 2 }) }), "closed");
    await refused(h, h.explicit({ loadInput: "not a function" as never }), "function");
  });

  it("reads the descriptor without running a getter and refuses a Proxy before any trap", async () => {
    const h = harness();
    let reads = 0;
    const withGetter = h.root();
    Object.defineProperty(withGetter, "maxCalls", {
      enumerable: true,
      get: () => {
        reads += 1;
        return 6;
      },
    });
    const before = h.ioCalls();
    await expect(h.t.runner.runTurn(h.explicit({ root: withGetter }))).rejects.toBeInstanceOf(
      ValidationError,
    );
    let traps = 0;
    const proxy = new Proxy(h.root(), {
      get: (t, p) => {
        traps += 1;
        return Reflect.get(t, p);
      },
      ownKeys: (t) => {
        traps += 1;
        return Reflect.ownKeys(t);
      },
    });
    await expect(h.t.runner.runTurn(h.explicit({ root: proxy }))).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect({ reads, traps, io: h.ioCalls() - before, loads: h.loads() }).toEqual({
      reads: 0,
      traps: 0,
      io: 0,
      loads: 0,
    });
  });

  it("'Its configuration/output versions and retention must match construction'", async () => {
    const h = harness();
    await refused(h, h.explicit({ root: h.root({ configRevision: "rev-2" }) }), "mismatch");
    await refused(h, h.explicit({ root: h.root({ resultContractVersion: 2 }) }), "mismatch");
    await refused(h, h.explicit({ root: h.root({ resultRetentionMs: 86_400_001 }) }), "mismatch");
  });

  it("'caps must match'", async () => {
    const h = harness();
    const cap = { perTurnUsd: { usdMicros: 1_000_000, onExceeded: "block" } };
    await refused(h, h.explicit({ root: h.root({ caps: cap }) }), "mismatch");
    const capped = harness({ config: { caps: { perTurnUsd: 1 } } });
    const view = await capped.t.runner.runTurn(
      capped.explicit({ root: capped.root({ caps: cap }) }),
    );
    expect(view.status).toBe("completed");
    await refused(capped, capped.explicit({ root: capped.root({ caps: {} }) }), "mismatch");
  });

  it("'maxCalls may narrow': at the runner's maxCalls it runs, one over is refused, fewer bind", async () => {
    const h = harness();
    await refused(h, h.explicit({ root: h.root({ maxCalls: SETTINGS.maxCalls + 1 }) }), "narrow");
    await refused(h, h.explicit({ root: h.root({ maxCalls: 0 }) }), "narrow");
    const atLimit = await h.t.runner.runTurn(h.explicit({ root: h.root({ maxCalls: 6 }) }));
    expect(atLimit.status).toBe("completed");
    const narrow = harness({
      script: [
        scriptedToolCall({ id: "c1", name: "lookup", input: { day: "monday" } }),
        scriptedText("never asked"),
      ],
    });
    const view = await narrow.t.runner.runTurn(
      narrow.explicit({ root: narrow.root({ maxCalls: 1 }) }),
    );
    expect(view.status).toBe("completed");
    if (view.status !== "completed") return;
    expect(view.result.callLimit).toEqual({ maxCalls: 1, answered: false });
    expect(narrow.t.model.calls).toBe(1);
  });

  it("'the declared root sensitivity must equal the intent'", async () => {
    const h = harness();
    await refused(
      h,
      h.explicit({ root: h.root({ sensitivity: "confidential" }) }),
      "intent_sensitivity",
    );
    await refused(h, h.explicit({ root: h.root({ sensitivity: "secret" }) }), "closed");
  });

  it("'never accept browser/model identities as authority': a root id shaped like the runner's keys is refused", async () => {
    const h = harness();
    const simpleKey = conversationRootKey(SCOPE, "s1", "k1");
    for (const rootId of [simpleKey, "sc1_abc", "ev_abc", "b1_x"])
      await refused(h, h.explicit({ root: h.root({ rootId }) }), "reserved");
    await refused(h, h.explicit({ root: h.root({ rootId: "has space" }) }), "id");
  });

  it("limits: a root id of 128 characters and a revision of 200 run; one more is refused", async () => {
    const h = harness({
      script: [
        scriptedToolCall({ id: "c1", name: "lookup", input: { day: "monday" } }),
        scriptedText("We open 9 to 5."),
      ],
    });
    await refused(h, h.explicit({ root: h.root({ rootId: "r".repeat(129) }) }), "id");
    await refused(h, h.explicit({ root: h.root({ inputRevision: "v".repeat(201) }) }), "id");
    const view = await h.t.runner.runTurn(
      h.explicit({ root: h.root({ rootId: "r".repeat(128), inputRevision: "v".repeat(200) }) }),
    );
    expect(view.status).toBe("completed");
    expect(h.t.model.calls).toBe(2);
  });
});

describe("explicit roots: bindings (seed 002)", () => {
  it("'Changed metadata conflicts before content access': trigger, profile, intent, revision, session", async () => {
    const h = harness({ config: { profiles: { desk: ["lookup"] } } });
    expect((await h.t.runner.runTurn(h.explicit())).status).toBe("completed");
    const changed: ExplicitTurnRequest[] = [
      h.explicit({ trigger: "whatsapp" }),
      h.explicit({ toolProfile: "desk" }),
      h.explicit({ intent: { ...INTENT, tier: "fast" } }),
      h.explicit({ root: h.root({ inputRevision: "rev-b" }) }),
      h.explicit({ root: h.root({ sessionId: "s2" }) }),
    ];
    for (const request of changed)
      await expect(h.t.runner.runTurn(request)).rejects.toBeInstanceOf(ConversationConflictError);
    expect(h.loads()).toBe(1);
    expect(h.t.model.calls).toBe(1);
  });

  it("'Arbitrary explicit roots keep exact binding semantics': another proposed deadline conflicts", async () => {
    const h = harness();
    expect((await h.t.runner.runTurn(h.explicit())).status).toBe("completed");
    const later = h.explicit({ root: h.root({ deadlineAt: h.t.clock.now() + 60_001 }) });
    await expect(h.t.runner.runTurn(later)).rejects.toBeInstanceOf(ConversationConflictError);
    expect(h.loads()).toBe(1);
  });

  it("'differing proposed deadlines reuse the first descriptor only if all other bindings match' (conversation-v1)", async () => {
    const h = harness({ script: [scriptedText("once")] });
    const simple = await h.t.runner.runTurn(h.t.request("k1"));
    expect(simple.status).toBe("completed");
    const descriptor = h.described("k1", h.t.clock.now() + 5_000);
    const viaRoot = await h.t.runner.runTurn(h.explicit({ root: descriptor }));
    expect(viaRoot).toEqual({ ...simple, replayed: true });
    expect(viaRoot.status === "completed" && viaRoot.rootKey).toBe(
      conversationRootKey(SCOPE, "s1", "k1"),
    );
    // One other binding differs (a narrower maxCalls): the first descriptor is not reused.
    const narrower = h.explicit({ root: { ...descriptor, maxCalls: 5 } });
    await expect(h.t.runner.runTurn(narrower)).rejects.toBeInstanceOf(ConversationConflictError);
    const otherContent = h.described("k1");
    const changed = h.explicit({
      root: createConversationDescriptor(
        { ...SETTINGS },
        { ...h.t.request("k1"), input: "Saturday?" },
        otherContent.deadlineAt,
      ),
    });
    await expect(h.t.runner.runTurn(changed)).rejects.toBeInstanceOf(ConversationConflictError);
    expect(h.loads()).toBe(0);
    expect(h.t.model.calls).toBe(1);
  });

  it("a simple request's binding is derived as before the descriptor existed: stored roots keep replaying", async () => {
    const h = harness();
    await h.t.runner.runTurn(h.t.request("k1"));
    const key = conversationRootKey(SCOPE, "s1", "k1");
    const record = await h.t.stores.rootResults.get(SCOPE, key, h.t.clock.now());
    const canonical = JSON.stringify({
      bound: {
        input: "When are you open on Monday?",
        intent: { sensitivity: "internal", tier: "balanced" },
        toolProfile: null,
        trigger: null,
      },
      configRevision: "rev-1",
      resultContractVersion: 1,
    });
    expect(record?.binding).toBe(`b1_${createHash("sha256").update(canonical).digest("hex")}`);
    expect(h.described("k1").inputRevision).toBe(record?.binding);
  });

  it("a descriptor's root first: the simple request with the same content replays it", async () => {
    const h = harness({ script: [scriptedText("once")] });
    const descriptor = h.described("k1");
    const first = await h.t.runner.runTurn(h.explicit({ root: descriptor }));
    expect(first.status).toBe("completed");
    h.t.clock.advance(1_000);
    const simple = await h.t.runner.runTurn(h.t.request("k1"));
    expect(simple).toEqual({ ...first, replayed: true });
    expect({ loads: h.loads(), calls: h.t.model.calls }).toEqual({ loads: 1, calls: 1 });
  });

  it("a conversation-v1 root whose loaded input is not what its revision hashed ends uncertain (input)", async () => {
    const h = harness();
    const root = h.described("k1");
    const view = await h.t.runner.runTurn(
      h.explicit({ root, loadInput: h.loader("Something else entirely") }),
    );
    expect(view.status).toBe("reconciliation_required");
    expect(h.t.uncertain.map((u) => [u.cause, u.persisted, u.released])).toEqual([
      ["input", false, true],
    ]);
    expect(h.t.model.calls).toBe(0);
  });

  it("createConversationDescriptor is pure, and refuses meta.event: 'An explicit root's lazy input cannot carry meta.event'", () => {
    const h = harness();
    const a = h.described("k1", 1_000);
    expect(h.described("k1", 1_000)).toEqual(a);
    expect(Object.isFrozen(a)).toBe(true);
    expect(h.ioCalls()).toBe(0);
    const withEvent = {
      ...h.t.request("k1"),
      input: {
        role: "user" as const,
        blocks: [{ type: "text" as const, text: "hi" }],
        meta: { event: { id: "msg-1", kind: "input" as const } },
      },
    };
    expect(() => createConversationDescriptor({ ...SETTINGS }, withEvent, 1_000)).toThrow(
      ValidationError,
    );
  });
});
