import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ModelRequest, Msg } from "@alma-harness/core";
import { SequentialIds } from "@alma-harness/core/testing";
import { DEFAULT_FINAL_ANSWER_NOTICE } from "@alma-harness/loop";
import { describe, expect, it, vi } from "vitest";
import { EnvError, pickProvider, readEnv } from "../src/config/env.js";
import { loadSecrets } from "../src/config/secrets.js";
import { createHost } from "../src/host.js";
import { waitPreference } from "../src/http/prefer.js";
import { noticeFor, viewError } from "../src/http/views.js";
import { classify, DEMO_HELP, demoStep } from "../src/models/demo-script.js";
import { demoSetup, providerSetup } from "../src/models/select.js";
import { PermissionDesk } from "../src/permissions.js";
import { LiveTurns } from "../src/turns.js";
import { SECRETS } from "./helpers.js";

function request(messages: Msg[]): ModelRequest {
  return { model: "offline-demo", system: [], messages, tools: [], maxOutputTokens: 100 };
}

const input = (text: string): Msg => ({
  role: "user",
  blocks: [
    { type: "text", text },
    {
      type: "text",
      text: "Today is 2026-11-29. Clinic: Sunrise. You are talking with patient p-1001 (Ana Souza).",
      origin: "harness",
    },
  ],
});

describe("the offline demo script", () => {
  it("picks a script from keywords and says what it is otherwise", () => {
    expect(
      [
        "When are you open?",
        "Any free slots?",
        "Please book an appointment",
        "Cancel my appointment",
        "I'm allergic to latex",
        "Do you remember my allergy?",
        "What is on my record?",
        "hello",
      ].map(classify),
    ).toEqual(["hours", "slots", "book", "cancel", "tell", "remember", "record", "help"]);
    expect(demoStep(request([input("hello")]))).toEqual({ kind: "text", text: DEMO_HELP });
  });

  it("answers the memory extraction with the allergy a person named, and reads recalled facts from the harness context", () => {
    const extraction = {
      ...request([]),
      messages: [
        {
          role: "user" as const,
          blocks: [
            {
              type: "text" as const,
              text: "Person: I am allergic to latex\nAssistant: Noted.\nPerson: I'm allergic to latex and to Iodine",
            },
          ],
        },
      ],
      output: { name: "memory_extraction", schema: { type: "object" } },
    };
    expect(JSON.parse((demoStep(extraction) as { text: string }).text)).toEqual({
      episode: "The patient wrote: I am allergic to latex",
      facts: [{ key: "allergy.latex", text: "Allergic to latex.", confidence: 0.9 }],
    });
    const recalled = {
      type: "text" as const,
      text: "[Recalled memory]\nFacts:\n- allergy.latex (2026-11-02): Allergic to latex.",
      origin: "harness" as const,
    };
    const asked = request([
      { role: "user", blocks: [{ type: "text", text: "Do you remember my allergy?" }, recalled] },
    ]);
    expect(demoStep(asked)).toEqual({
      kind: "text",
      text: "From our earlier conversations I remember: Allergic to latex.",
    });
  });

  it("plays the booking script from the tool results already in the request", () => {
    const first = demoStep(request([input("book me in")]));
    expect(first).toMatchObject({ kind: "tool", name: "find_free_slots" });
    const afterSlots: Msg[] = [
      input("book me in"),
      {
        role: "assistant",
        blocks: [{ type: "tool_call", id: "c1", name: "find_free_slots", input: {} }],
      },
      {
        role: "user",
        blocks: [
          {
            type: "tool_result",
            callId: "c1",
            name: "find_free_slots",
            output: { slots: ["2026-11-30T09:00"] },
            isError: false,
          },
        ],
      },
    ];
    expect(demoStep(request(afterSlots))).toMatchObject({
      kind: "tool",
      name: "book_appointment",
      input: { slotId: "2026-11-30T09:00" },
    });
    const denied: Msg[] = [
      ...afterSlots,
      {
        role: "assistant",
        blocks: [{ type: "tool_call", id: "c2", name: "book_appointment", input: {} }],
      },
      {
        role: "user",
        blocks: [
          {
            type: "tool_result",
            callId: "c2",
            name: "book_appointment",
            output: "permission denied: denied by the operator",
            isError: true,
          },
        ],
      },
    ];
    expect(demoStep(request(denied))).toEqual({
      kind: "text",
      text: "The booking was not made: permission denied: denied by the operator. The clinic team can help you by phone.",
    });
  });

  it("reads its own patient id from the turn's harness context, and answers when told it is the last step", () => {
    expect(demoStep(request([input("my record please")]))).toMatchObject({
      kind: "tool",
      name: "read_patient_record",
      input: { patientId: "p-1001" },
    });
    const last = input("my record please");
    const withNotice: Msg = {
      ...last,
      blocks: [
        ...last.blocks,
        { type: "text", text: DEFAULT_FINAL_ANSWER_NOTICE, origin: "harness" },
      ],
    };
    expect(demoStep(request([withNotice]))).toMatchObject({ kind: "text" });
  });
});

describe("the permission desk (asks that cannot park: a delegate's)", () => {
  const desk = (turns = new LiveTurns()) => ({
    turns,
    desk: new PermissionDesk(turns, new SequentialIds(), () => 0, new Set(["book_appointment"])),
  });
  const ask = {
    turnId: "c1_x",
    callId: "call1",
    tool: "book_appointment",
    action: "book",
    subject: "slot:1",
    input: {},
  };

  it("asks only for the tools it names, and denies asks of turns it does not know", async () => {
    const { desk: d } = desk();
    expect(d.decide({ ...ask, tool: "opening_hours" })).toBe("allow");
    expect(d.decide(ask)).toBe("ask");
    // Nobody here can show it: the kernel's denial, never an operator's.
    expect(await d.resolve(ask, new AbortController().signal)).toEqual({
      allowed: false,
      by: "kernel",
      reason: "no_resolver",
    });
    expect(await d.answer("ask_1", true)).toBe("unknown");
  });

  it("withdraws an ask when the engine's signal aborts, and tells followers", async () => {
    const { turns, desk: d } = desk();
    const states: string[] = [];
    let release: () => void = () => undefined;
    void turns.run(
      "c1_x",
      { org: "o", uid: "u" },
      "s",
      0,
      () =>
        new Promise(
          (resolve) => (release = () => resolve({ status: "in_progress", rootKey: "c1_x" })),
        ),
    );
    d.subscribe("c1_x", (_a, state) => states.push(state));
    const controller = new AbortController();
    const answer = d.resolve(ask, controller.signal);
    expect(await d.pending()).toHaveLength(1);
    controller.abort();
    expect(await answer).toEqual({ allowed: false, by: "kernel", reason: "cancelled" });
    expect(await d.pending()).toEqual([]);
    expect(states).toEqual(["pending", "expired"]);
    release();
  });

  it("on close denies every waiting ask by shutdown, and every later ask unasked", async () => {
    const { turns, desk: d } = desk();
    const states: string[] = [];
    let release: () => void = () => undefined;
    void turns.run(
      "c1_x",
      { org: "o", uid: "u" },
      "s",
      0,
      () =>
        new Promise(
          (resolve) => (release = () => resolve({ status: "in_progress", rootKey: "c1_x" })),
        ),
    );
    d.subscribe("c1_x", (_a, state) => states.push(state));
    const waiting = d.resolve(ask, new AbortController().signal);
    expect(d.close()).toBe(1);
    const shutdown = { allowed: false, by: "kernel", reason: "shutdown" };
    expect(await waiting).toEqual(shutdown);
    expect(states).toEqual(["pending", "shutdown"]);
    expect(await d.resolve({ ...ask, callId: "call2" }, new AbortController().signal)).toEqual(
      shutdown,
    );
    expect(await d.pending()).toEqual([]);
    expect(states).toEqual(["pending", "shutdown"]);
    release();
  });
});

describe("configuration", () => {
  it("routes to the provider whose key is set, else the offline demo", () => {
    expect(pickProvider({})).toBe("demo");
    expect(pickProvider({ OPENROUTER_API_KEY: "k", ALMA_OPENAI_COMPAT_URL: "http://x" })).toBe(
      "openrouter",
    );
    expect(pickProvider({ ANTHROPIC_API_KEY: "k", OPENAI_API_KEY: "k" })).toBe("anthropic");
    expect(pickProvider({ OPENAI_API_KEY: " " })).toBe("demo");
    expect(pickProvider({ ANTHROPIC_API_KEY: "k", ALMA_PROVIDER: "demo" })).toBe("demo");
    expect(() => pickProvider({ ALMA_PROVIDER: "gemini" })).toThrow(EnvError);
  });

  it("reads port, host, home and caps, refusing bad values in one line", () => {
    const env = readEnv({ PORT: "9000", ALMA_CAP_TURN_USD: "0.1" }, "/srv");
    expect(env).toMatchObject({
      host: "127.0.0.1",
      port: 9000,
      home: "/srv/.alma",
      caps: { perTurnUsd: 0.1, perClinicDayUsd: 2 },
    });
    expect(() => readEnv({ PORT: "http" })).toThrow("PORT must be an integer 0-65535");
    expect(() => readEnv({ ALMA_CAP_CLINIC_DAY_USD: "0.0000001" })).toThrow(/six decimals/);
  });

  it("reads the socket bounds, turns per tenant, allowed hosts and shutdown grace, with documented defaults", () => {
    const defaults = readEnv({}, "/srv");
    expect(defaults.limits).toMatchObject({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 5_000,
      maxConnections: 256,
    });
    expect(defaults.allowedHosts).toBeUndefined();
    expect(defaults.shutdownGraceMs).toBe(10_000);
    expect(defaults.turnsPerTenant).toBe(64);
    expect(readEnv({ ALMA_TURNS_PER_TENANT: "8" }).turnsPerTenant).toBe(8);
    expect(() => readEnv({ ALMA_TURNS_PER_TENANT: "0" })).toThrow(EnvError);
    const set = readEnv({
      ALMA_REQUEST_TIMEOUT_MS: "2000",
      ALMA_HEADERS_TIMEOUT_MS: "1000",
      ALMA_MAX_CONNECTIONS: "8",
      ALMA_ALLOWED_HOSTS: "Alma.Example, [::1]",
      ALMA_SHUTDOWN_GRACE_MS: "0",
    });
    expect(set.limits).toMatchObject({
      requestTimeoutMs: 2000,
      headersTimeoutMs: 1000,
      maxConnections: 8,
    });
    expect(set.allowedHosts).toEqual(new Set(["alma.example", "::1"]));
    expect(set.shutdownGraceMs).toBe(0);
    expect(readEnv({ ALMA_ALLOWED_HOSTS: "*" }).allowedHosts).toBe("any");
    expect(() => readEnv({ ALMA_HEADERS_TIMEOUT_MS: "40000" })).toThrow(
      /must not exceed ALMA_REQUEST_TIMEOUT_MS/,
    );
    expect(() => readEnv({ ALMA_MAX_CONNECTIONS: "0" })).toThrow(EnvError);
    // The listen backlog: 4,096 by default, 1 to 65,535 (at the limit and one over).
    expect(defaults.limits.listenBacklog).toBe(4_096);
    expect(readEnv({ ALMA_LISTEN_BACKLOG: "65535" }).limits.listenBacklog).toBe(65_535);
    expect(() => readEnv({ ALMA_LISTEN_BACKLOG: "65536" })).toThrow(EnvError);
    expect(() => readEnv({ ALMA_LISTEN_BACKLOG: "0" })).toThrow(EnvError);
    // The health listener's port: none unless set, 0 to 65,535 (at the limit and one over).
    expect(defaults.healthPort).toBeUndefined();
    expect(readEnv({ ALMA_HEALTH_PORT: "65535" }).healthPort).toBe(65_535);
    expect(() => readEnv({ ALMA_HEALTH_PORT: "65536" })).toThrow(EnvError);
  });

  it("creates the dev secrets once, private to the user, and reuses them", () => {
    const home = mkdtempSync(join(tmpdir(), "alma-secrets-"));
    const a = loadSecrets(home, { jwtSecret: undefined, adminToken: undefined });
    const b = loadSecrets(home, { jwtSecret: undefined, adminToken: undefined });
    expect(b.adminToken).toBe(a.adminToken);
    expect(Buffer.from(b.jwtSecret).equals(Buffer.from(a.jwtSecret))).toBe(true);
    expect(statSync(join(home, "jwt-secret")).mode & 0o777).toBe(0o600);
    expect(() => loadSecrets(home, { jwtSecret: "short", adminToken: undefined })).toThrow(
      /at least 32 bytes/,
    );
  });

  it("builds a provider setup: a model per tier, priced, routed by sensitivity", () => {
    const setup = providerSetup(readEnv({ ANTHROPIC_API_KEY: "sk-test" }), "anthropic");
    expect(setup).toMatchObject({
      provider: "anthropic",
      offlineDemo: false,
      tiers: { fast: "claude-haiku-5-5", balanced: "claude-sonnet-5-5", deep: "claude-opus-5-5" },
    });
    expect(setup.policy.resolve({ tier: "balanced", sensitivity: "confidential" })).toMatchObject({
      clientId: setup.clients[0]?.id,
      model: "claude-sonnet-5-5",
      cache: { ttl: "5m" },
    });
    expect(() => setup.policy.resolve({ tier: "fast", sensitivity: "restricted" })).toThrow();
    const openai = providerSetup(
      readEnv({ OPENAI_API_KEY: "sk-test", ALMA_MODEL_FAST: "gpt-4.1-nano" }),
      "openai",
    );
    expect(openai.policy.resolve({ tier: "fast", sensitivity: "internal" })).toMatchObject({
      model: "gpt-4.1-nano",
      cache: false,
    });
  });

  it("refuses to start on an unpriced model or a compat provider without its URL", () => {
    expect(() =>
      providerSetup(
        readEnv({ OPENROUTER_API_KEY: "k", ALMA_MODEL_DEEP: "some/unpriced-model" }),
        "openrouter",
      ),
    ).toThrow(/the deep model "some\/unpriced-model" has no price/);
    expect(() => providerSetup(readEnv({ ALMA_PROVIDER: "compat" }), "compat")).toThrow(
      "ALMA_PROVIDER=compat needs ALMA_OPENAI_COMPAT_URL",
    );
    const compat = providerSetup(
      readEnv({
        ALMA_OPENAI_COMPAT_URL: "http://127.0.0.1:11434/v1",
        ALMA_OPENAI_COMPAT_MODEL: "llama3",
        ALMA_OPENAI_COMPAT_PRICE: "0.1,0.2",
      }),
      "compat",
    );
    expect(compat.tiers).toEqual({ fast: "llama3", balanced: "llama3", deep: "llama3" });
    expect(compat.prices).toEqual({
      version: "compat-0.1-0.2",
      models: { llama3: { rates: { input: 0.1, output: 0.2 } } },
    });
  });

  it("honors Prefer: respond-async and wait=N, never waiting longer than the host allows", () => {
    const req = (prefer: string) => new Request("http://x/", { headers: { prefer } });
    expect(waitPreference(req("respond-async"), 25_000)).toEqual({
      ms: 0,
      applied: "respond-async",
    });
    expect(waitPreference(req("wait=3"), 25_000)).toEqual({ ms: 3_000, applied: "wait=3" });
    // Clamped to the maximum (60 s by default), and the answer says what was applied.
    expect(waitPreference(req("wait=999"), 25_000)).toEqual({ ms: 60_000, applied: "wait=60" });
    expect(waitPreference(req("wait=999"), 25_000, 30_000)).toEqual({
      ms: 30_000,
      applied: "wait=30",
    });
    expect(waitPreference(req(""), 25_000)).toEqual({ ms: 25_000 });
    expect(waitPreference(req(""), 0)).toEqual({ ms: 0 });
    expect(waitPreference(req("handling=lenient, wait=5"), 0)).toEqual({
      ms: 5_000,
      applied: "wait=5",
    });
  });
});

describe("maintenance", () => {
  it("runs the runtime's maintenance on demand and on its timer, one run at a time", async () => {
    const host = await createHost({
      models: demoSetup(),
      secrets: SECRETS,
      store: { home: mkdtempSync(join(tmpdir(), "alma-m-")), databaseUrl: undefined },
    });
    expect(await host.maintain()).toEqual({ released: [], fenced: 0 });
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      const maintain = vi.spyOn(host.context.runtime, "maintain");
      const stop = host.startMaintenance(60_000);
      vi.advanceTimersByTime(60_000);
      expect(maintain).toHaveBeenCalledTimes(1);
      stop();
      vi.advanceTimersByTime(120_000);
      expect(maintain).toHaveBeenCalledTimes(1);
    } finally {
      vi.useRealTimers();
      await host.close(0);
    }
  });
});

describe("the person's notice", () => {
  const result = (over: Record<string, unknown>) =>
    ({
      toolCalls: [],
      warnings: [],
      stopReason: null,
      terminalReason: "completed",
      ...over,
    }) as unknown as Parameters<typeof noticeFor>[0];
  it("a refused step has its own notice, not the generic unanswered one", () => {
    const refused = noticeFor(
      result({ terminalReason: "refused", stopReason: "refusal", refusal: { category: "cyber" } }),
      "",
      [],
    );
    expect(refused).toMatch(/cannot help/);
    expect(refused).not.toBe(noticeFor(result({}), "", []));
    expect(noticeFor(result({}), "an answer", [])).toBeUndefined();
  });

  it("a turn unanswered after every attempt failed has its own notice (spec: call-retry)", () => {
    const failed = noticeFor(
      result({ terminalReason: "unanswered", unanswered: { cause: "call:main:aborted" } }),
      "",
      [],
    );
    expect(failed).toMatch(/could not reach its model/);
    expect(failed).not.toBe(noticeFor(result({}), "", []));
  });
});

describe("a request that was not admitted says why", () => {
  it("names the route, the cancellation or the passed deadline; nothing ran in any", () => {
    const said = (reason: "routing_unavailable" | "cancelled" | "deadline") => {
      const e = viewError({ status: "not_admitted", reason });
      return [e.code, e.message];
    };
    expect(said("routing_unavailable")).toEqual([
      "not_admitted",
      "no model route is available for this request; nothing ran",
    ]);
    expect(said("cancelled")).toEqual([
      "not_admitted",
      "the request was cancelled before it was admitted; nothing ran",
    ]);
    expect(said("deadline")).toEqual([
      "not_admitted",
      "the request's deadline had passed before it was admitted; nothing ran",
    ]);
  });
});
