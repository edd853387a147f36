import { SEARCH_TOOLS_NAME } from "@alma-harness/core";
import { type McpHub, openMcp, parseMcpConfig } from "@alma-harness/mcp";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  EVERYTHING,
  type HttpServer,
  intent,
  runtimeWith,
  startEverythingHttp,
  Tenants,
  toolResults,
} from "./helpers.js";

const SCOPE = { org: "clinic-a", uid: "p-1" };
const rules = { allow: ["echo", "get-sum", "get-tiny-image", "get-structured-content"] };

function config(transport: object) {
  return parseMcpConfig({
    servers: [{ name: "everything", transport, tenants: { "clinic-a": rules } }],
  });
}

/** A turn that loads the echo tool with search_tools, calls it, then answers. */
async function echoTurn(hub: McpHub, tenants: Tenants, key: string) {
  const { rt, model } = runtimeWith(
    hub.tools,
    [
      scriptedToolCall({ id: "s1", name: SEARCH_TOOLS_NAME, input: { query: "echo a message" } }),
      scriptedToolCall({ id: "c1", name: "everything__echo", input: { message: "hello" } }),
      scriptedText("It said hello."),
    ],
    hub.permissions(),
  );
  tenants.register(SCOPE, "s1", key);
  const view = await rt.runner.runTurn({
    scope: SCOPE,
    sessionId: "s1",
    idempotencyKey: key,
    input: "Echo hello",
    intent,
  });
  return { view, model, results: await toolResults(rt, SCOPE, "s1"), rt };
}

describe("server-everything over stdio", () => {
  const tenants = new Tenants();
  let hub: McpHub;
  beforeAll(async () => {
    hub = await openMcp(
      config({ type: "stdio", command: process.execPath, args: [EVERYTHING, "stdio"] }),
      { tenantOf: tenants.tenantOf },
    );
  }, 30_000);
  afterAll(() => hub.close());

  it("registers its tools as <server>__<tool>, deferred, with nothing left out", () => {
    const names = hub.tools.map((t) => t.name);
    expect(names).toContain("everything__echo");
    expect(names).toContain("everything__get-sum");
    expect(hub.tools.every((t) => t.deferred)).toBe(true);
    expect(hub.problems).toEqual([]);
    expect(hub.revision).toMatch(/^mcp-[0-9a-f]{16}$/);
  });

  it("a deferred tool costs nothing until search_tools loads it, then runs through the turn", async () => {
    const { view, model, results } = await echoTurn(hub, tenants, "k1");
    expect(view.status).toBe("completed");
    const advertised = model.requests.map((r) => r.tools.map((t) => t.name));
    expect(advertised[0]).toEqual([SEARCH_TOOLS_NAME]);
    expect(advertised[1]).toContain("everything__echo");
    const echo = results.find((r) => r.name === "everything__echo");
    expect(echo).toMatchObject({ isError: false, output: "Echo: hello" });
  });

  it("the same snapshot gives the same revision; the handshake happens once per tenant", async () => {
    const again = await openMcp(
      config({ type: "stdio", command: process.execPath, args: [EVERYTHING, "stdio"] }),
      { tenantOf: tenants.tenantOf },
    );
    expect(again.revision).toBe(hub.revision);
    await again.close();
  });

  it("a tool the tenant's rules do not name is denied before anything is sent", async () => {
    const { rt } = runtimeWith(
      hub.tools,
      [
        scriptedToolCall({ id: "s1", name: SEARCH_TOOLS_NAME, input: { query: "environment" } }),
        scriptedToolCall({ id: "c1", name: "everything__get-env", input: {} }),
        scriptedText("done"),
      ],
      hub.permissions(),
    );
    tenants.register(SCOPE, "s2", "k2");
    const view = await rt.runner.runTurn({
      scope: SCOPE,
      sessionId: "s2",
      idempotencyKey: "k2",
      input: "env?",
      intent,
    });
    expect(view.status).toBe("completed");
    const env = (await toolResults(rt, SCOPE, "s2")).find((r) => r.name === "everything__get-env");
    expect(env?.isError).toBe(true);
    expect(JSON.stringify(env?.output)).not.toContain("PATH");
  });
});

describe("server-everything over Streamable HTTP", () => {
  const tenants = new Tenants();
  let server: HttpServer;
  let hub: McpHub;
  beforeAll(async () => {
    server = await startEverythingHttp();
    hub = await openMcp(config({ type: "http", url: server.url }), {
      tenantOf: tenants.tenantOf,
    });
  }, 30_000);
  afterAll(async () => {
    await hub?.close();
    await server?.stop();
  });

  it("the same tools, and a call goes through the turn", async () => {
    expect(hub.problems).toEqual([]);
    const { view, results } = await echoTurn(hub, tenants, "h1");
    expect(view.status).toBe("completed");
    expect(results.find((r) => r.name === "everything__echo")?.output).toBe("Echo: hello");
  });

  it("an image is described by type and size, never pasted as base64", async () => {
    const { rt } = runtimeWith(
      hub.tools,
      [
        scriptedToolCall({ id: "s1", name: SEARCH_TOOLS_NAME, input: { query: "tiny image" } }),
        scriptedToolCall({ id: "c1", name: "everything__get-tiny-image", input: {} }),
        scriptedText("done"),
      ],
      hub.permissions(),
    );
    tenants.register(SCOPE, "s3", "h2");
    const view = await rt.runner.runTurn({
      scope: SCOPE,
      sessionId: "s3",
      idempotencyKey: "h2",
      input: "image",
      intent,
    });
    expect(view.status).toBe("completed");
    const image = (await toolResults(rt, SCOPE, "s3")).find(
      (r) => r.name === "everything__get-tiny-image",
    );
    const output = image?.output as { content?: { type: string; bytes?: number }[] } | undefined;
    const parts = output?.content ?? [];
    expect(parts.find((p) => p.type === "image")?.bytes ?? 0).toBeGreaterThan(0);
    expect(JSON.stringify(image?.output)).not.toMatch(/iVBOR/);
  });
});
