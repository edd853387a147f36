import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type McpHub, openMcp, parseMcpConfig } from "@alma-harness/mcp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HOSTILE,
  type HttpServer,
  loadAndCall,
  resultOf,
  runAs,
  runtimeWith,
  startEverythingHttp,
  Tenants,
} from "./helpers.js";

const A = { org: "clinic-a", uid: "p-1" };

describe("a hostile server: what does not fit is left out with a typed problem, the rest works", () => {
  const tenants = new Tenants();
  const dir = mkdtempSync(join(tmpdir(), "alma-mcp-hostile-"));
  const shiftFile = join(dir, "shift");
  let hub: McpHub;
  beforeAll(async () => {
    writeFileSync(shiftFile, "v1");
    hub = await openMcp(
      parseMcpConfig({
        servers: [
          {
            name: "hostile",
            transport: { type: "stdio", command: process.execPath, args: [HOSTILE] },
            callTimeoutMs: 500,
            maxOutputChars: 2_000,
            replaySafe: ["slow"],
            tenants: {
              "clinic-a": { env: { SHIFT_FILE: shiftFile }, allow: ["*"] },
              "clinic-b": { env: { HOSTILE_MALFORMED: "1" }, allow: ["*"] },
            },
          },
        ],
      }),
      { tenantOf: tenants.tenantOf },
    );
  }, 30_000);
  afterAll(async () => {
    await hub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("bad names, a name listed twice, an uncompilable schema and an unreadable list are problems", () => {
    expect(hub.tools.map((t) => t.name).sort()).toEqual([
      "hostile__crash",
      "hostile__fine",
      "hostile__huge",
      "hostile__shifty",
      "hostile__slow",
    ]);
    const kinds = hub.problems.map((p) => `${p.kind}:${p.org ?? ""}:${p.tool ?? ""}`);
    expect(kinds).toContain("bad_name:clinic-a:bad.name");
    expect(kinds).toContain("bad_list:clinic-a:twice");
    expect(kinds).toContain("bad_schema::bad_schema");
    expect(kinds.filter((k) => k.startsWith("bad_name:"))).toHaveLength(2);
    expect(kinds).toContain("bad_list:clinic-b:");
  });

  it("a huge answer is bounded to the tool's output limit", async () => {
    const { rt } = runtimeWith(
      hub.tools,
      loadAndCall("huge", "hostile__huge", {}),
      hub.permissions(),
    );
    expect((await runAs(rt, tenants, A, "h", "h1")).status).toBe("completed");
    const output = (await resultOf(rt, A, "h", "hostile__huge"))?.output;
    expect(typeof output).toBe("string");
    expect((output as string).length).toBeLessThan(2_200);
    expect(output as string).toMatch(/cut/);
  });

  it("the call carries the effect key in _meta", async () => {
    const { rt } = runtimeWith(
      hub.tools,
      loadAndCall("fine", "hostile__fine", {}),
      hub.permissions(),
    );
    await runAs(rt, tenants, A, "f", "f1");
    expect((await resultOf(rt, A, "f", "hostile__fine"))?.output).toMatch(/^ok \S{8,}/);
  });

  it("a call that never answers, replay-safe: an observation that says the outcome is unknown", async () => {
    const { rt } = runtimeWith(
      hub.tools,
      loadAndCall("slow", "hostile__slow", {}),
      hub.permissions(),
    );
    expect((await runAs(rt, tenants, A, "s", "s1")).status).toBe("completed");
    const slow = await resultOf(rt, A, "s", "hostile__slow");
    expect(slow?.isError).toBe(true);
    expect(JSON.stringify(slow?.output)).toContain("MCP_OUTCOME_UNKNOWN");
  });

  it("a process that dies mid-call, not replay-safe: the turn ends reconciliation_required", async () => {
    const { rt } = runtimeWith(
      hub.tools,
      loadAndCall("crash", "hostile__crash", {}),
      hub.permissions(),
    );
    expect((await runAs(rt, tenants, A, "c", "c1")).status).toBe("reconciliation_required");
  });

  it("the next call starts a new session; a tool listed differently there is refused, not run", async () => {
    writeFileSync(shiftFile, "v2");
    const fine = runtimeWith(
      hub.tools,
      loadAndCall("fine", "hostile__fine", {}),
      hub.permissions(),
    );
    await runAs(fine.rt, tenants, A, "n", "n1");
    expect((await resultOf(fine.rt, A, "n", "hostile__fine"))?.isError).toBe(false);
    const shifty = runtimeWith(
      hub.tools,
      loadAndCall("shifty", "hostile__shifty", {}),
      hub.permissions(),
    );
    await runAs(shifty.rt, tenants, A, "v", "v1");
    const changed = await resultOf(shifty.rt, A, "v", "hostile__shifty");
    expect(changed?.isError).toBe(true);
    expect(JSON.stringify(changed?.output)).toContain("MCP_TOOL_CHANGED");
  });
});

describe("a server that is down", () => {
  const tenants = new Tenants();
  let server: HttpServer;
  let hub: McpHub;
  beforeAll(async () => {
    server = await startEverythingHttp();
    hub = await openMcp(
      parseMcpConfig({
        servers: [
          {
            name: "everything",
            transport: { type: "http", url: server.url },
            tenants: { "clinic-a": { allow: ["echo"] } },
          },
          {
            name: "missing",
            transport: { type: "stdio", command: join(tmpdir(), "no-such-mcp-server") },
            tenants: { "clinic-a": { allow: ["*"] } },
          },
        ],
      }),
      { tenantOf: tenants.tenantOf },
    );
  }, 30_000);
  afterAll(async () => {
    await hub?.close();
    await server?.stop();
  });

  it("one that never started is a problem at open; the others register", () => {
    expect(hub.problems).toMatchObject([
      { kind: "unavailable", server: "missing", org: "clinic-a" },
    ]);
    expect(hub.tools.some((t) => t.name === "everything__echo")).toBe(true);
  });

  it("one that went away: its calls are error observations and the turn completes", async () => {
    await server.stop();
    const { rt } = runtimeWith(
      hub.tools,
      loadAndCall("echo", "everything__echo", { message: "hi" }),
      hub.permissions(),
    );
    expect((await runAs(rt, tenants, A, "d", "d1")).status).toBe("completed");
    const echo = await resultOf(rt, A, "d", "everything__echo");
    expect(echo?.isError).toBe(true);
    expect(JSON.stringify(echo?.output)).toContain("MCP_UNAVAILABLE");
  });
});
