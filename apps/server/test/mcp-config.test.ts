import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SEARCH_TOOLS_NAME } from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { afterAll, describe, expect, it } from "vitest";
import { EnvError } from "../src/config/env.js";
import { readHostConfig } from "../src/config/file.js";
import { CARLA, fakeSetup, HARBOR, hostPerTest, turn } from "./helpers.js";

const EVERYTHING = fileURLToPath(
  new URL(
    "../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    import.meta.url,
  ),
);
const dir = mkdtempSync(join(tmpdir(), "alma-host-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function writeConfig(name: string, value: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

const MCP = {
  servers: [
    {
      name: "everything",
      transport: { type: "stdio", command: process.execPath, args: [EVERYTHING, "stdio"] },
      tenants: { "sunrise-clinic": { allow: ["echo"] } },
    },
  ],
};

describe("the host's configuration file", () => {
  it("is read from ALMA_CONFIG, or alma.config.json when it exists; none is fine", () => {
    const path = writeConfig("alma.config.json", { mcp: MCP });
    expect(readHostConfig({ ALMA_CONFIG: path }, "/").mcp?.servers[0]?.name).toBe("everything");
    expect(readHostConfig({}, dir).path).toBe(path);
    expect(readHostConfig({}, tmpdir())).toEqual({});
  });

  it("a missing named file, an unknown section or a bad mcp field is an EnvError naming it", () => {
    expect(() => readHostConfig({ ALMA_CONFIG: join(dir, "nope.json") }, "/")).toThrow(EnvError);
    const unknown = writeConfig("unknown.json", { mcp: MCP, tools: [] });
    expect(() => readHostConfig({ ALMA_CONFIG: unknown }, "/")).toThrow(/"tools" is not a section/);
    const bad = writeConfig("bad.json", {
      mcp: { servers: [{ ...MCP.servers[0], name: "a__b" }] },
    });
    expect(() => readHostConfig({ ALMA_CONFIG: bad }, "/")).toThrow(/servers\[0\]\.name/);
  });
});

describe("the host with MCP servers from its configuration", () => {
  const startHost = hostPerTest();

  it("a patient's turn loads and runs the MCP tool; another clinic, bound to no server, is denied", async () => {
    const script = () => [
      scriptedToolCall({ id: "s1", name: SEARCH_TOOLS_NAME, input: { query: "echo a message" } }),
      scriptedToolCall({ id: "c1", name: "everything__echo", input: { message: "hello" } }),
      scriptedText("Done."),
    ];
    const models = fakeSetup([...script(), ...script()]);
    const t = await startHost({
      models,
      mcp: readHostConfig({ ALMA_CONFIG: writeConfig("h.json", { mcp: MCP }) }, "/").mcp,
    });
    expect(t.host.context.mcp?.tools.map((x) => x.name)).toContain("everything__echo");
    const sunrise = await turn(t, await t.token(), "s1", "k1", "echo hello");
    expect(sunrise.status).toBe(200);
    const seen = JSON.stringify(models.fake.requests[2]?.messages);
    expect(seen).toContain("Echo: hello");
    const harbor = await turn(t, await t.token(HARBOR, CARLA), "s2", "k2", "echo hello");
    expect(harbor.status).toBe(200);
    const denied = JSON.stringify(models.fake.requests[5]?.messages);
    expect(denied).toContain("denied by policy");
    expect(denied).not.toContain("Echo: hello");
  }, 30_000);
});
