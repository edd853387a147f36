import { defineTool } from "@alma-harness/core";
import type { PermissionController, PermissionDecision } from "@alma-harness/loop";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import {
  completed,
  flush,
  harness,
  type HarnessOptions,
  hashed,
  uncertain,
  until,
  log,
} from "./harness.js";

/** A tool whose authorization intent is `{action: "read", subject: input.patient}`; it counts its runs. */
function records() {
  const state = { runs: 0, trailAtRun: [] as string[][] };
  return {
    state,
    tool: (h: () => ReturnType<typeof harness>) =>
      defineTool({
        name: "read_record",
        description: "Reads a patient record.",
        input: {
          type: "object",
          properties: { patient: { type: "string" } },
          required: ["patient"],
        },
        authorize: (input) => ({ action: "read", subject: `patient:${String(input.patient)}` }),
        handler: () => {
          state.runs += 1;
          state.trailAtRun.push(
            h()
              .trail("policy")
              .map((e) => e.action),
          );
          return "record";
        },
      }),
  };
}

const call = (id: string, patient = "7") => ({ id, name: "read_record", input: { patient } });

function setup(
  permissions: PermissionController | undefined,
  calls = [call("c1")],
  opts: HarnessOptions = {},
) {
  const r = records();
  let h!: ReturnType<typeof harness>;
  h = harness({
    ...(permissions ? { permissions } : {}),
    tools: [r.tool(() => h)],
    script: [scriptedToolCall(calls), scriptedText("ok")],
    ...opts,
  });
  const policy = () =>
    h
      .trail("policy")
      .map((e) => [e.action, e.decision, e.by, e.rule ?? e.reason ?? null, e.callId]);
  return { h, state: r.state, policy };
}

/** A resolver that allows and counts how often it was asked. */
function counting() {
  const asked = { count: 0 };
  return {
    asked,
    resolve: () => {
      asked.count += 1;
      return true;
    },
  };
}

const ask = (resolve?: PermissionController["resolve"]): PermissionController => ({
  decide: () => "ask",
  ...(resolve ? { resolve } : {}),
});

describe("tool permission: policy before effect", () => {
  it("no controller: the built-in rule allows, attributed to the kernel, recorded before the run", async () => {
    const { h, state, policy } = setup(undefined);
    completed(await h.run());
    expect(state.runs).toBe(1);
    expect(policy()).toEqual([
      ["intent", undefined, undefined, null, "c1"],
      ["decision", "allow", "kernel", "kernel.registered", "c1"],
    ]);
    expect(state.trailAtRun[0]).toEqual(["intent", "decision"]);
    // The subject is derived from the input: the trail keeps its keyed hash and the action, never the value.
    expect(h.trail("policy")[0]?.authorization).toEqual({
      action: "read",
      subject: hashed("patient:7"),
    });
  });

  it("allow: the controller's decision is the operator's, and the tool runs", async () => {
    const { h, state, policy } = setup({ decide: () => "allow" });
    completed(await h.run());
    expect(state.runs).toBe(1);
    expect(policy()[1]).toEqual(["decision", "allow", "operator", "controller", "c1"]);
  });

  it("deny: an error observation the model reads; the tool never runs", async () => {
    const { h, state } = setup({ decide: () => "deny" });
    const outcome = await h.run();
    completed(outcome);
    expect(state.runs).toBe(0);
    expect(log(outcome)[2]?.blocks[0]).toMatchObject({ code: "TOOL_DENIED", isError: true });
    expect(h.model.calls).toBe(2);
  });

  it("ask → allow: requested and resolved are durable before the tool runs", async () => {
    const { h, state, policy } = setup(ask(() => true));
    completed(await h.run());
    expect(state.runs).toBe(1);
    expect(state.trailAtRun[0]).toEqual([
      "intent",
      "decision",
      "permission.requested",
      "permission.resolved",
    ]);
    expect(policy().slice(1)).toEqual([
      ["decision", "ask", "operator", "controller", "c1"],
      ["permission.requested", "ask", undefined, null, "c1"],
      ["permission.resolved", "allow", "operator", null, "c1"],
    ]);
  });

  it("ask → deny: the operator's denial, no run", async () => {
    const { h, state, policy } = setup(ask(() => false));
    completed(await h.run());
    expect(state.runs).toBe(0);
    expect(policy().at(-1)).toEqual([
      "permission.resolved",
      "deny",
      "operator",
      "operator_denied",
      "c1",
    ]);
  });

  it("ask without a resolver: denied by the kernel (fail closed)", async () => {
    const { h, state, policy } = setup(ask());
    completed(await h.run());
    expect(state.runs).toBe(0);
    expect(policy().at(-1)).toEqual(["permission.resolved", "deny", "kernel", "no_resolver", "c1"]);
  });

  it("a resolver that throws denies (kernel)", async () => {
    const { h, state, policy } = setup(
      ask(() => {
        throw new Error("ui crashed");
      }),
    );
    completed(await h.run());
    expect(state.runs).toBe(0);
    expect(policy().at(-1)).toEqual([
      "permission.resolved",
      "deny",
      "kernel",
      "resolver_failed",
      "c1",
    ]);
  });

  it("a resolver answering anything but a boolean or an attributed decision denies (kernel)", async () => {
    for (const answer of [
      "yes",
      1,
      null,
      { allowed: false, by: "kernel" },
      { allowed: true, by: "nobody" },
    ]) {
      const { h, state, policy } = setup(ask(() => answer as unknown as boolean));
      completed(await h.run());
      expect(state.runs).toBe(0);
      expect(policy().at(-1)).toEqual([
        "permission.resolved",
        "deny",
        "kernel",
        "resolver_failed",
        "c1",
      ]);
    }
  });

  it("a resolver that knows no person decided answers the kernel's denial; the model never reads an operator's", async () => {
    const { h, state, policy } = setup(
      ask(() => ({ allowed: false, by: "kernel", reason: "shutdown" })),
    );
    const outcome = await h.run();
    completed(outcome);
    expect(state.runs).toBe(0);
    expect(policy().at(-1)).toEqual(["permission.resolved", "deny", "kernel", "shutdown", "c1"]);
    const denial = log(outcome)
      .flatMap((m) => m.blocks)
      .find((b) => b.type === "tool_result");
    expect(denial).toMatchObject({
      output: "permission denied: the service stopped before anyone decided",
    });
    const allowed = setup(ask(() => ({ allowed: true, by: "operator" })));
    completed(await allowed.h.run());
    expect(allowed.state.runs).toBe(1);
  });

  it("a resolver that never answers is denied at the timeout, not a millisecond before", async () => {
    let asked = false;
    const never = () => {
      asked = true;
      return new Promise<boolean>(() => undefined);
    };
    const { h, state, policy } = setup(ask(never), undefined, {
      limits: { permissionTimeoutMs: 5_000 },
    });
    const turn = h.run();
    await until(() => asked, "resolver asked");
    h.clock.advance(4_999);
    await flush(50);
    expect(policy().at(-1)?.[0]).toBe("permission.requested");
    h.clock.advance(1);
    completed(await turn);
    expect(state.runs).toBe(0);
    expect(policy().at(-1)).toEqual([
      "permission.resolved",
      "deny",
      "kernel",
      "resolver_timeout",
      "c1",
    ]);
  });

  it("a controller whose decide throws denies (kernel), fail closed", async () => {
    const { h, state, policy } = setup({
      decide: () => {
        throw new Error("policy engine down");
      },
    });
    completed(await h.run());
    expect(state.runs).toBe(0);
    expect(policy()[1]).toEqual(["decision", "deny", "kernel", "kernel.decide_failed", "c1"]);
  });
});

describe("run-scoped grants", () => {
  it("an allowed ask satisfies a later matching ask in the same turn", async () => {
    const { asked, resolve } = counting();
    const { h, state, policy } = setup(ask(resolve), [call("c1"), call("c2")]);
    completed(await h.run());
    expect(asked.count).toBe(1);
    expect(state.runs).toBe(2);
    expect(
      policy()
        .filter((p) => p[4] === "c2")
        .map((p) => p[0]),
    ).toEqual(["intent", "decision", "grant.used"]);
  });

  it("a grant is keyed by action and subject: another subject asks again", async () => {
    const { asked, resolve } = counting();
    const { h, state } = setup(ask(resolve), [call("c1", "7"), call("c2", "8")]);
    completed(await h.run());
    expect(asked.count).toBe(2);
    expect(state.runs).toBe(2);
  });

  it("a grant never overrides a later hard deny", async () => {
    const decisions: PermissionDecision[] = ["ask", "deny"];
    const { h, state, policy } = setup({ decide: () => decisions.shift()!, resolve: () => true }, [
      call("c1"),
      call("c2"),
    ]);
    const outcome = await h.run();
    completed(outcome);
    expect(state.runs).toBe(1);
    expect(
      policy()
        .filter((p) => p[4] === "c2")
        .map((p) => [p[0], p[1]]),
    ).toEqual([
      ["intent", undefined],
      ["decision", "deny"],
    ]);
    expect(log(outcome)[2]?.blocks[1]).toMatchObject({ callId: "c2", code: "TOOL_DENIED" });
  });

  it("grants end with the turn", async () => {
    const { asked, resolve } = counting();
    const { h } = setup(ask(resolve));
    completed(await h.run());
    h.model.push(scriptedToolCall(call("c9")), scriptedText("ok"));
    completed(await h.run());
    expect(asked.count).toBe(2);
  });
});

describe("a failed pre-effect record: the tool does not run and the turn is uncertain", () => {
  for (const action of [
    "intent",
    "decision",
    "permission.requested",
    "permission.resolved",
  ] as const) {
    it(`when ${action} cannot be recorded`, async () => {
      const { h, state } = setup(
        ask(() => true),
        undefined,
        {
          auditFail: (e) =>
            e.trail === "policy" && e.action === action
              ? new Error("policy store down")
              : undefined,
        },
      );
      const outcome = uncertain(await h.run());
      expect(outcome.cause).toBe("audit");
      expect(state.runs).toBe(0);
      expect(h.model.calls).toBe(1);
    });
  }
});
