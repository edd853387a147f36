import {
  existsSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type McpHub, openMcp, parseMcpConfig } from "@alma-harness/mcp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FILESYSTEM, loadAndCall, resultOf, runAs, runtimeWith, Tenants } from "./helpers.js";

const A = { org: "clinic-a", uid: "p-1" };

/**
 * server-filesystem in a temp folder. The tenant allows every tool; the server marks its writes
 * `destructiveHint: true`, which tightens them to an ask: the turn parks, nothing is written until
 * a person approves, and a denial writes nothing. Reads stay allowed.
 */
describe("server-filesystem: annotations tighten allow to ask, and the ask parks the turn", () => {
  const tenants = new Tenants();
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "alma-mcp-fs-")));
  let hub: McpHub;
  beforeAll(async () => {
    writeFileSync(join(dir, "hours.txt"), "Mon-Fri 9-17");
    hub = await openMcp(
      parseMcpConfig({
        servers: [
          {
            name: "files",
            transport: { type: "stdio", command: process.execPath, args: [FILESYSTEM, dir] },
            tenants: { "clinic-a": { allow: ["*"] } },
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

  it("a read is allowed and runs at once", async () => {
    expect(hub.problems).toEqual([]);
    const { rt } = runtimeWith(
      hub.tools,
      loadAndCall("read a text file", "files__read_text_file", { path: join(dir, "hours.txt") }),
      hub.permissions(),
    );
    expect((await runAs(rt, tenants, A, "r", "r1")).status).toBe("completed");
    const read = await resultOf(rt, A, "r", "files__read_text_file");
    expect(JSON.stringify(read?.output)).toContain("Mon-Fri 9-17");
  });

  it("a write parks on an ask; approved, it runs once, with the call's arguments", async () => {
    const target = join(dir, "note.txt");
    const { rt } = runtimeWith(
      hub.tools,
      loadAndCall("write a file", "files__write_file", { path: target, content: "booked" }),
      hub.permissions(),
    );
    const parked = await runAs(rt, tenants, A, "w", "w1");
    expect(parked.status).toBe("awaiting_approval");
    if (parked.status !== "awaiting_approval") return;
    expect(parked.asks.map((a) => a.tool)).toEqual(["files__write_file"]);
    expect(existsSync(target)).toBe(false);
    const resolved = await rt.runner.resolveAsk({
      scope: A,
      askId: parked.asks[0]?.askId as string,
      decision: "approve",
      by: "operator-1",
    });
    expect(resolved.view.status).toBe("completed");
    expect(readFileSync(target, "utf8")).toBe("booked");
  });

  it("denied, nothing is written and the model reads the denial", async () => {
    const target = join(dir, "denied.txt");
    const { rt } = runtimeWith(
      hub.tools,
      loadAndCall("write a file", "files__write_file", { path: target, content: "no" }),
      hub.permissions(),
    );
    const parked = await runAs(rt, tenants, A, "d", "d1");
    if (parked.status !== "awaiting_approval") throw new Error(parked.status);
    const resolved = await rt.runner.resolveAsk({
      scope: A,
      askId: parked.asks[0]?.askId as string,
      decision: "deny",
      by: "operator-1",
    });
    expect(resolved.view.status).toBe("completed");
    expect(existsSync(target)).toBe(false);
    expect((await resultOf(rt, A, "d", "files__write_file"))?.isError).toBe(true);
  });

  it("an annotation never widens: a tenant's ask or deny holds for a read-only tool", async () => {
    const strict = await openMcp(
      parseMcpConfig({
        servers: [
          {
            name: "files",
            transport: { type: "stdio", command: process.execPath, args: [FILESYSTEM, dir] },
            tenants: { "clinic-a": { ask: ["read_text_file"], deny: ["list_directory"] } },
          },
        ],
      }),
      { tenantOf: tenants.tenantOf },
    );
    try {
      const { rt } = runtimeWith(
        strict.tools,
        loadAndCall("read a text file", "files__read_text_file", { path: join(dir, "hours.txt") }),
        strict.permissions(),
      );
      expect((await runAs(rt, tenants, A, "x", "x1")).status).toBe("awaiting_approval");
      expect(strict.revision).not.toBe(hub.revision);
    } finally {
      await strict.close();
    }
  });
});
