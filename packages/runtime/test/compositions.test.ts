import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { conversationRootKey } from "@alma-harness/conversation";
import { defineTool, ProviderError } from "@alma-harness/core";
import {
  FakeModelClient,
  scriptedError,
  scriptedText,
  scriptedToolCall,
} from "@alma-harness/loop/testing";
import { replyText, type RuntimeConfig, sqlite } from "@alma-harness/runtime";
import { clinicConfig, compositions, skipNote } from "./open.js";

/** The scripted model, each stream held until `gate` opens. */
class GatedModel extends FakeModelClient {
  constructor(
    script: ConstructorParameters<typeof FakeModelClient>[0],
    private readonly gate: Promise<void>,
  ) {
    super(script);
  }

  override stream(...args: Parameters<FakeModelClient["stream"]>) {
    const inner = super.stream(...args);
    const gate = this.gate;
    return {
      async *[Symbol.asyncIterator]() {
        await gate;
        yield* inner;
      },
    };
  }
}

const SCOPE = { org: "clinic-a", uid: "u1" };
const hours = defineTool({
  name: "opening_hours",
  description: "Opening hours on a day.",
  input: { type: "object", properties: { day: { type: "string" } }, required: ["day"] },
  handler: (input) => ({ day: input.day as string, open: "09:00-17:00" }),
});

function config(model: FakeModelClient, uncertain: string[] = []): RuntimeConfig {
  return clinicConfig(model, { tools: [hours], onUncertainTurn: (e) => uncertain.push(e.cause) });
}

const request = (key: string, sessionId = "s1") => ({
  scope: SCOPE,
  sessionId,
  idempotencyKey: key,
  input: "When are you open on Monday?",
  intent: { tier: "balanced" as const, sensitivity: "internal" as const },
});

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const COMPOSITIONS = compositions("rt");

for (const [name, open, enabled] of COMPOSITIONS) {
  describe.skipIf(!enabled)(`the runner on ${name}${skipNote(enabled)}`, () => {
    it("runs the quickstart: a tool turn completes, persists and replays without dispatching", async () => {
      const model = new FakeModelClient([
        scriptedToolCall({ id: "c1", name: "opening_hours", input: { day: "monday" } }),
        scriptedText("9 to 5."),
      ]);
      const rt = await open(config(model));
      try {
        const view = await rt.runner.runTurn(request("k1"));
        expect(view.status).toBe("completed");
        if (view.status !== "completed") return;
        expect(view.result.reply).toEqual([{ type: "text", text: "9 to 5." }]);
        expect(replyText(view.result)).toBe("9 to 5.");
        expect(view.result.costMicros).toBeGreaterThan(0);
        const again = await rt.runner.runTurn(request("k1"));
        expect(again).toEqual({ ...view, replayed: true });
        expect(model.calls).toBe(2);
        expect((await rt.stores.sessions.load(SCOPE, "s1")).messages).toHaveLength(4);
        const trails = await rt.stores.audit.query(SCOPE, { turnId: view.rootKey, limit: 500 });
        expect(trails.items.map((e) => e.trail)).toEqual(
          expect.arrayContaining(["routing", "cost", "policy", "lifecycle"]),
        );
      } finally {
        await rt.close();
      }
    });

    it("answers busy for a second key and keeps one dispatch per key under concurrency", async () => {
      // The turn that wins the session holds it inside its model call until another key has been
      // answered busy: the race is real whatever the machine's load.
      let open_: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => {
        open_ = resolve;
      });
      const model = new GatedModel([scriptedText("one")], gate);
      const rt = await open(config(model));
      try {
        const settled: string[] = [];
        const runs = ["k1", "k1", "k2"].map((key) =>
          rt.runner.runTurn(request(key)).then((view) => {
            settled.push(view.status);
            return view;
          }),
        );
        while (!settled.includes("busy")) await new Promise((r) => setTimeout(r, 5));
        open_();
        const views = await Promise.all(runs);
        expect(model.calls).toBe(1);
        expect(views.map((v) => v.status)).toContain("completed");
        expect(views.filter((v) => v.status === "completed" && !v.replayed)).toHaveLength(1);
      } finally {
        await rt.close();
      }
    });

    it("releases an uncertain turn's session, and erasure makes the root unavailable", async () => {
      const uncertain: string[] = [];
      const model = new FakeModelClient([
        scriptedError(
          new ProviderError("overloaded", { kind: "overloaded", provider: "fake", status: 529 }),
        ),
        scriptedText("ok"),
      ]);
      const rt = await open(config(model, uncertain));
      try {
        expect((await rt.runner.runTurn(request("k1"))).status).toBe("reconciliation_required");
        expect(uncertain).toEqual(["call:main:overloaded:none"]);
        expect((await rt.runner.runTurn(request("k2"))).status).toBe("completed");
        await rt.erase(SCOPE, "s1");
        expect((await rt.runner.read(SCOPE, conversationRootKey(SCOPE, "s1", "k2")))?.status).toBe(
          "unavailable",
        );
      } finally {
        await rt.close();
      }
    });
  });
}

describe("sqlite persistence", () => {
  it("keeps completed turns across a reopen of the same file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "alma-rt-"));
    dirs.push(dir);
    const path = join(dir, "alma.db");
    const first = sqlite({
      ...config(new FakeModelClient([scriptedText("hello")])),
      store: { path },
    });
    await first.runner.runTurn(request("k1"));
    await first.close();
    const model = new FakeModelClient([]);
    const second = sqlite({ ...config(model), store: { path } });
    const view = await second.runner.runTurn(request("k1"));
    expect(view).toMatchObject({ status: "completed", replayed: true });
    expect(model.calls).toBe(0);
    await second.close();
  });
});
