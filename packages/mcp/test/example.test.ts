import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

describe("examples/mcp-ask", () => {
  it("npm run example:mcp-ask parks the write, writes nothing, then writes once approved", () => {
    const run = spawnSync("npm", ["run", "-s", "example:mcp-ask"], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/parked: files__write_file waits for the operator/);
    expect(run.stdout).toMatch(/written before approval: nothing/);
    expect(run.stdout).toMatch(/approved: Your booking note is saved\./);
    expect(run.stdout).toMatch(/written after approval: Ana, Monday 09:00/);
  }, 90_000);
});
