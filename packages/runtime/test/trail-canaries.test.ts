import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConversationConfigError } from "@alma-harness/conversation";
import {
  type AuditRecord,
  type ModelStreamEvent,
  type Scope,
  sessionPseudonym,
  trailHash,
  type Usage,
} from "@alma-harness/core";
import {
  FakeModelClient,
  scriptedEvents,
  scriptedText,
  scriptedToolCall,
} from "@alma-harness/loop/testing";
import { postgres, type Runtime, sqlite, TRAIL_KEY_FILE } from "@alma-harness/runtime";
import { CANARIES, canariesIn, canaryLookupTool as lookup } from "@alma-harness/testing";
import { afterAll, describe, expect, it } from "vitest";
import { clinicConfig, compositions, RUNTIME_TRAIL_KEY, skipNote } from "./open.js";

const SCOPE: Scope = { org: "clinic-a", uid: "u1" };
const OTHER: Scope = { org: "clinic-b", uid: "u1" };

function canarySearch() {
  const usage: Usage = { inputTokens: 10, outputTokens: 5, webSearchRequests: 1 };
  const events: ModelStreamEvent[] = [
    {
      type: "provider_tool_call",
      provider: "fake",
      id: "srv_1",
      name: "web_search",
      payload: { query: CANARIES.searchQuery },
    },
    {
      type: "provider_tool_result",
      provider: "fake",
      callId: "srv_1",
      name: "web_search",
      resultCount: 2,
      payload: [{ url: CANARIES.mediaUri }],
    },
    { type: "text_delta", text: "Searching." },
    { type: "usage", evidence: { status: "known", usage } },
    {
      type: "response_completed",
      stopReason: "pause_turn",
      text: "Searching.",
      toolCalls: [],
      usage,
    },
  ];
  return scriptedEvents(events);
}

function canaryModel(): FakeModelClient {
  return new FakeModelClient([
    canarySearch(),
    scriptedToolCall([
      {
        id: "c1",
        name: "lookup_patient",
        input: { name: CANARIES.patientName, apiKey: CANARIES.apiKey },
      },
      { id: "c2", name: CANARIES.inventedTool, input: { patient: CANARIES.patientName } },
    ]),
    scriptedText(`Done for ${CANARIES.patientName}.`),
  ]);
}

const request = (scope: Scope, key: string) => ({
  scope,
  sessionId: CANARIES.phoneSessionId,
  idempotencyKey: key,
  input: {
    role: "user" as const,
    blocks: [
      {
        type: "text" as const,
        text: `I am ${CANARIES.patientName}, my key is ${CANARIES.apiKey}; search ${CANARIES.searchQuery}`,
      },
      {
        type: "media" as const,
        kind: "image" as const,
        ref: CANARIES.mediaUri,
        contentType: "image/png",
        sizeBytes: 2048,
      },
    ],
  },
  intent: { tier: "balanced" as const, sensitivity: "internal" as const },
});

async function allRecords(rt: Runtime, scope: Scope): Promise<AuditRecord[]> {
  const out: AuditRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await rt.stores.audit.query(scope, { limit: 500, ...(cursor ? { cursor } : {}) });
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

for (const [name, open, enabled] of compositions("trails")) {
  describe.skipIf(!enabled)(
    `content-free trails through the conversation runner on ${name}${skipNote(enabled)}`,
    () => {
      it("no canary reaches any audit record; the runner's trails find the session by its real id", async () => {
        const rt = await open(
          clinicConfig(canaryModel(), {
            tools: [lookup],
            providerTools: [{ kind: "web_search", maxSensitivity: "internal" }],
            prices: {
              version: "p1",
              models: { demo: { rates: { input: 3, output: 15 }, webSearchPerRequestUsd: 0.01 } },
            },
          }),
        );
        try {
          const view = await rt.runner.runTurn(request(SCOPE, "k1"));
          expect(view.status === "completed" && view.result.terminalReason).toBe("answered");
          // The canaries reached the session (content), so the scan is not vacuous.
          expect(
            canariesIn(
              JSON.stringify(
                (await rt.stores.sessions.load(SCOPE, CANARIES.phoneSessionId)).messages,
              ),
            ),
          ).not.toEqual([]);
          const records = await allRecords(rt, SCOPE);
          expect(records.length).toBeGreaterThan(10);
          for (const record of records) expect(canariesIn(JSON.stringify(record))).toEqual([]);
          const pseudonym = sessionPseudonym(RUNTIME_TRAIL_KEY, SCOPE, CANARIES.phoneSessionId);
          expect(records.every((r) => r.sessionId === pseudonym)).toBe(true);
          expect(records).toContainEqual(
            expect.objectContaining({
              trail: "lifecycle",
              action: "tool.call",
              callId: "c2",
              detail: "unregistered",
            }),
          );
          expect(records).toContainEqual(
            expect.objectContaining({
              trail: "access",
              tool: "lookup_patient",
              resource: trailHash(RUNTIME_TRAIL_KEY, SCOPE, `patients/${CANARIES.patientName}`),
            }),
          );
          // The operator asks by the real session id; the runner translates it once.
          const bySession = await rt.runner.trails(SCOPE, {
            sessionId: CANARIES.phoneSessionId,
            limit: 500,
          });
          expect(bySession.items.map((r) => r.seq)).toEqual(records.map((r) => r.seq));
          expect(
            (await rt.runner.trails(SCOPE, { sessionId: "someone-else", limit: 500 })).items,
          ).toEqual([]);
          expect(
            (
              await rt.runner.trails(SCOPE, { sessionId: CANARIES.phoneSessionId, trail: "cost" })
            ).items.every((r) => r.trail === "cost"),
          ).toBe(true);
        } finally {
          await rt.close();
        }
      });

      it("the same session id in two tenants is stored under two pseudonyms; each tenant's query finds only its own", async () => {
        const model = new FakeModelClient([scriptedText("a"), scriptedText("b")]);
        const rt = await open(clinicConfig(model));
        try {
          for (const scope of [SCOPE, OTHER])
            expect(
              (await rt.runner.runTurn({ ...request(scope, "k1"), input: "hello" })).status,
            ).toBe("completed");
          const a = await rt.runner.trails(SCOPE, { sessionId: CANARIES.phoneSessionId });
          const b = await rt.runner.trails(OTHER, { sessionId: CANARIES.phoneSessionId });
          expect(a.items.length).toBeGreaterThan(0);
          expect(b.items.length).toBeGreaterThan(0);
          const [pa] = new Set(a.items.map((r) => r.sessionId));
          const [pb] = new Set(b.items.map((r) => r.sessionId));
          expect(pa).not.toBe(pb);
          expect(a.items.every((r) => r.scope.org === SCOPE.org)).toBe(true);
        } finally {
          await rt.close();
        }
      });
    },
  );
}

describe("where a composition's trail key comes from", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const fresh = () => {
    const dir = mkdtempSync(join(tmpdir(), "alma-trail-key-"));
    dirs.push(dir);
    return dir;
  };
  const keyless = (model: FakeModelClient) => {
    const { trailKey: _none, ...rest } = clinicConfig(model);
    return rest;
  };

  it("SQLite without trailKey creates one beside the database (mode 0600) and keeps it across restarts: trails stay joinable", async () => {
    const dir = fresh();
    const path = join(dir, "alma.db");
    const first = sqlite({
      ...keyless(new FakeModelClient([scriptedText("one")])),
      store: { path },
    });
    await first.runner.runTurn({ ...request(SCOPE, "k1"), input: "hello" });
    await first.close();
    const file = join(dir, TRAIL_KEY_FILE);
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const key = readFileSync(file, "utf8").trim();
    expect(key.length).toBeGreaterThanOrEqual(32);
    const second = sqlite({
      ...keyless(new FakeModelClient([scriptedText("two")])),
      store: { path },
    });
    try {
      await second.runner.runTurn({ ...request(SCOPE, "k2"), input: "again" });
      const trails = await second.runner.trails(SCOPE, {
        sessionId: CANARIES.phoneSessionId,
        limit: 500,
      });
      expect(
        trails.items.filter((r) => r.trail === "lifecycle" && r.action === "turn.started"),
      ).toHaveLength(2);
      expect(new Set(trails.items.map((r) => r.sessionId))).toEqual(
        new Set([sessionPseudonym(key, SCOPE, CANARIES.phoneSessionId)]),
      );
    } finally {
      await second.close();
    }
  });

  it("a trail key that is too short is a typed configuration error, before anything opens", () => {
    const dir = fresh();
    expect(() =>
      sqlite({
        ...clinicConfig(new FakeModelClient([])),
        trailKey: "short",
        store: { path: join(dir, "alma.db") },
      }),
    ).toThrow(ConversationConfigError);
    expect(existsSync(join(dir, "alma.db"))).toBe(false);
  });

  it("PostgreSQL requires a trailKey: every process on the database must share one", async () => {
    await expect(
      postgres({
        ...keyless(new FakeModelClient([])),
        store: { connectionString: "postgresql://127.0.0.1:1/none" },
      }),
    ).rejects.toBeInstanceOf(ConversationConfigError);
  });
});
