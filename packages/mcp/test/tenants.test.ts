import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type McpHub, openMcp, parseMcpConfig } from "@alma-harness/mcp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  EVERYTHING,
  loadAndCall,
  MEMORY,
  resultOf,
  runAs,
  runtimeWith,
  Tenants,
} from "./helpers.js";

const A = { org: "clinic-a", uid: "p-1" };
const B = { org: "clinic-b", uid: "p-1" };
const OUTSIDER = { org: "clinic-c", uid: "p-1" };

/**
 * Two tenants on one host: each has its own server process (its own memory file, its own token in
 * its environment) and its own rules; the host's own environment never reaches a server.
 */
describe("two tenants on one host", () => {
  const tenants = new Tenants();
  const dir = mkdtempSync(join(tmpdir(), "alma-mcp-tenants-"));
  let hub: McpHub;
  beforeAll(async () => {
    process.env.ALMA_TEST_HOST_SECRET = "host-secret-never-sent";
    const memoryOf = (org: string) => ({
      env: { MEMORY_FILE_PATH: join(dir, `${org}.jsonl`) },
      allow: ["*"],
    });
    hub = await openMcp(
      parseMcpConfig({
        servers: [
          {
            name: "memory",
            transport: { type: "stdio", command: process.execPath, args: [MEMORY] },
            tenants: { "clinic-a": memoryOf("clinic-a"), "clinic-b": memoryOf("clinic-b") },
          },
          {
            name: "everything",
            transport: { type: "stdio", command: process.execPath, args: [EVERYTHING, "stdio"] },
            tenants: {
              "clinic-a": { env: { TENANT_TOKEN: "token-of-clinic-a" }, allow: ["get-env"] },
              "clinic-b": { env: { TENANT_TOKEN: "token-of-clinic-b" }, allow: ["get-env"] },
            },
          },
        ],
      }),
      { tenantOf: tenants.tenantOf },
    );
  }, 30_000);
  afterAll(async () => {
    await hub.close();
    delete process.env.ALMA_TEST_HOST_SECRET;
    rmSync(dir, { recursive: true, force: true });
  });

  it("what one tenant stores through its server, the other never reads", async () => {
    expect(hub.problems).toEqual([]);
    const entity = { name: "Alice Example", entityType: "patient", observations: ["allergic"] };
    const write = runtimeWith(
      hub.tools,
      loadAndCall("create entities", "memory__create_entities", { entities: [entity] }),
      hub.permissions(),
    );
    expect((await runAs(write.rt, tenants, A, "s1", "a1")).status).toBe("completed");
    const created = await resultOf(write.rt, A, "s1", "memory__create_entities");
    expect(created?.isError).toBe(false);

    const readA = runtimeWith(
      hub.tools,
      loadAndCall("read graph", "memory__read_graph", {}),
      hub.permissions(),
    );
    await runAs(readA.rt, tenants, A, "s2", "a2");
    expect(
      JSON.stringify((await resultOf(readA.rt, A, "s2", "memory__read_graph"))?.output),
    ).toContain("Alice Example");

    const readB = runtimeWith(
      hub.tools,
      loadAndCall("read graph", "memory__read_graph", {}),
      hub.permissions(),
    );
    await runAs(readB.rt, tenants, B, "s1", "b1");
    const graphB = await resultOf(readB.rt, B, "s1", "memory__read_graph");
    expect(graphB?.isError).toBe(false);
    expect(JSON.stringify(graphB?.output)).not.toContain("Alice");
  });

  it("each tenant's credentials reach only its own session; the host's environment reaches none", async () => {
    const envOf = async (scope: typeof A, key: string) => {
      const t = runtimeWith(
        hub.tools,
        loadAndCall("environment", "everything__get-env", {}),
        hub.permissions(),
      );
      await runAs(t.rt, tenants, scope, "env", key);
      return JSON.stringify((await resultOf(t.rt, scope, "env", "everything__get-env"))?.output);
    };
    const a = await envOf(A, "e1");
    const b = await envOf(B, "e2");
    expect(a).toContain("token-of-clinic-a");
    expect(a).not.toContain("token-of-clinic-b");
    expect(b).toContain("token-of-clinic-b");
    expect(b).not.toContain("token-of-clinic-a");
    expect(a + b).not.toContain("host-secret-never-sent");
  });

  it("a tenant bound to no server is denied every MCP tool: nothing is sent", async () => {
    const t = runtimeWith(
      hub.tools,
      loadAndCall("read graph", "memory__read_graph", {}),
      hub.permissions(),
    );
    expect((await runAs(t.rt, tenants, OUTSIDER, "s1", "c1")).status).toBe("completed");
    const result = await resultOf(t.rt, OUTSIDER, "s1", "memory__read_graph");
    expect(result?.isError).toBe(true);
    expect(JSON.stringify(result?.output)).toContain("denied by policy");
  });

  it("a turn the host cannot place is denied (fail closed)", async () => {
    const t = runtimeWith(
      hub.tools,
      loadAndCall("read graph", "memory__read_graph", {}),
      hub.permissions(),
    );
    const view = await t.rt.runner.runTurn({
      scope: A,
      sessionId: "unplaced",
      idempotencyKey: "u1",
      input: "go",
      intent: { tier: "balanced", sensitivity: "internal" },
    });
    expect(view.status).toBe("completed");
    const result = await resultOf(t.rt, A, "unplaced", "memory__read_graph");
    expect(JSON.stringify(result?.output)).toContain("denied by policy");
  });
});
