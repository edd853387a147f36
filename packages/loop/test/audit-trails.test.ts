import { type AuditEvent, defineProviderTool, defineTool } from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import {
  completed,
  echoTool,
  harness,
  type HarnessOptions,
  hashed,
  pseudonym,
  uncertain,
} from "./harness.js";
import { SECRET_QUERY, scriptedSearch } from "./search-fixtures.js";

const MEDIA_URI = "https://media.clinic.example/patients/4411/xray.png?token=SECRET";
const SCHEMA_WORD = "diagnosis_code_field";

const lookup = defineTool({
  name: "lookup",
  description: "Looks up a patient.",
  input: {
    type: "object",
    properties: { [SCHEMA_WORD]: { type: "string" }, id: { type: "string" } },
  },
  access: (input) => ({ resource: `patients/${String(input.id)}` }),
  handler: () => "found",
});

function failing(match: (e: AuditEvent) => boolean, opts: HarnessOptions = {}) {
  let ran = 0;
  const counted = defineTool({
    ...lookup,
    name: "lookup",
    description: "Looks up.",
    input: { type: "object" },
    handler: () => ++ran,
  });
  const h = harness({
    tools: [counted],
    auditFail: (e) => (match(e) ? new Error("audit sink down") : undefined),
    script: [
      scriptedToolCall({ id: "c1", name: "lookup", input: { id: "7" } }),
      scriptedText("ok"),
    ],
    ...opts,
  });
  return { h, runs: () => ran };
}

describe("an audit failure makes the turn uncertain and prevents further effects", () => {
  it("turn.started: no model call", async () => {
    const { h } = failing((e) => e.trail === "lifecycle" && e.action === "turn.started");
    expect(uncertain(await h.run()).cause).toBe("audit");
    expect(h.model.calls).toBe(0);
  });

  it("the routing record: the claim ends not dispatched, the model is never called", async () => {
    const { h } = failing((e) => e.trail === "routing");
    expect(uncertain(await h.run()).cause).toBe("audit");
    expect(h.model.calls).toBe(0);
    expect(await h.journal.get(h.input().scope, "turn-1:main:1")).toMatchObject({
      state: "not_dispatched",
      notDispatchedCause: "audit",
    });
  });

  it("the tool intent: the tool never runs", async () => {
    const { h, runs } = failing((e) => e.trail === "lifecycle" && e.action === "tool.call");
    expect(uncertain(await h.run()).cause).toBe("audit");
    expect(runs()).toBe(0);
    expect(h.model.calls).toBe(1);
  });

  it("the access record: the tool never runs", async () => {
    const { h, runs } = failing((e) => e.trail === "access");
    expect(uncertain(await h.run()).cause).toBe("audit");
    expect(runs()).toBe(0);
  });

  it("the tool result: no further model call", async () => {
    const { h, runs } = failing((e) => e.trail === "lifecycle" && e.action === "tool.result");
    expect(uncertain(await h.run()).cause).toBe("audit");
    expect(runs()).toBe(1);
    expect(h.model.calls).toBe(1);
  });

  it("the cost record: uncertain with the receipt kept, no further model call", async () => {
    const { h, runs } = failing((e) => e.trail === "cost");
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("audit");
    expect(outcome.receipts).toHaveLength(1);
    expect(runs()).toBe(0);
    expect(h.model.calls).toBe(1);
  });

  it("a budget warning record", async () => {
    const { h } = failing((e) => e.trail === "lifecycle" && e.action === "budget.warning", {
      limits: { maxToolCalls: 2 },
    });
    expect(uncertain(await h.run()).cause).toBe("audit");
    expect(h.model.calls).toBe(1);
  });
});

describe("trail contents", () => {
  it("access: each tool's declared resource, by call", async () => {
    const h = harness({
      tools: [lookup],
      script: [
        scriptedToolCall({ id: "c1", name: "lookup", input: { id: "7", [SCHEMA_WORD]: "x" } }),
        scriptedText("ok"),
      ],
    });
    completed(await h.run());
    expect(
      h.trail("access").map((e) => [e.tool, e.resource, e.action, e.callId, e.turnId]),
    ).toEqual([["lookup", hashed("patients/7"), "read", "c1", "turn-1"]]);
  });

  it("access: each web search result is one event by provider and count, never the query", async () => {
    const h = harness({
      providerTools: [defineProviderTool({ kind: "web_search" })],
      script: [scriptedSearch("found", { count: 4 })],
    });
    completed(await h.run());
    expect(h.trail("access").map((e) => [e.tool, e.resource, e.action, e.callId])).toEqual([
      ["web_search", "provider:fake:results:4", "read", "turn-1:main:1"],
    ]);
    expect(JSON.stringify(h.audit.events)).not.toContain(SECRET_QUERY);
  });

  it("access: media in the input is egress by provider, kind and size, never the URI", async () => {
    const h = harness({ script: [scriptedText("I see it")] });
    completed(
      await h.run({
        input: [
          { type: "text", text: "look" },
          {
            type: "media",
            kind: "image",
            ref: MEDIA_URI,
            contentType: "image/png",
            sizeBytes: 2048,
          },
          { type: "media", kind: "document", ref: "doc-ref-9", contentType: "application/pdf" },
        ],
      }),
    );
    expect(h.trail("access").map((e) => [e.tool, e.resource, e.action])).toEqual([
      ["media", "provider:fake:image:bytes:2048", "egress"],
      ["media", "provider:fake:document:unknown_size", "egress"],
    ]);
    expect(JSON.stringify(h.audit.events)).not.toContain(MEDIA_URI);
    expect(JSON.stringify(h.audit.events)).not.toContain("doc-ref-9");
  });

  it("nothing on any trail carries a query, a URI or schema content", async () => {
    const h = harness({
      tools: [lookup, echoTool],
      providerTools: [defineProviderTool({ kind: "web_search" })],
      hooks: {
        "step:pre": () =>
          ({ output: { name: "x", schema: { properties: { [SCHEMA_WORD]: {} } } } }) as never,
      },
      script: [
        scriptedSearch("found", { stopReason: "pause_turn" }),
        scriptedToolCall({ id: "c1", name: "lookup", input: { id: "7", [SCHEMA_WORD]: "J45" } }),
        scriptedText("ok"),
      ],
    });
    completed(
      await h.run({
        input: [
          { type: "media", kind: "image", ref: MEDIA_URI, contentType: "image/png", sizeBytes: 10 },
        ],
      }),
    );
    const text = JSON.stringify(h.audit.events);
    for (const secret of [SECRET_QUERY, MEDIA_URI, SCHEMA_WORD, "J45", "example.org"])
      expect(text).not.toContain(secret);
    expect(
      h.audit.events.every((e) => e.turnId === "turn-1" && e.sessionId === pseudonym("s1")),
    ).toBe(true);
    const byCall = h.audit.events.filter(
      (e) => e.trail === "policy" || (e.trail === "lifecycle" && e.action.startsWith("tool.")),
    );
    expect(byCall.every((e) => e.callId === "c1")).toBe(true);
  });

  it("lifecycle: turn and step events with the context version and revision each request consumed", async () => {
    const h = harness({
      tools: [echoTool],
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
        scriptedText("ok"),
      ],
    });
    completed(await h.run({ revision: 10 }));
    expect(
      h.trail("lifecycle").map((e) => [e.action, e.messageRevision ?? null, e.detail ?? null]),
    ).toEqual([
      ["turn.started", null, null],
      ["model.request", 11, null],
      ["tool.call", null, "echo"],
      ["tool.result", null, "ok"],
      ["model.request", 13, null],
      ["turn.completed", 14, "answered"],
    ]);
  });
});
