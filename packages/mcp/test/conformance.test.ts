import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const CLI = `${ROOT}node_modules/@modelcontextprotocol/conformance/dist/index.js`;
const HOOK = fileURLToPath(new URL("./conformance/node20-glob.mjs", import.meta.url));
const CLIENT = fileURLToPath(new URL("./conformance/client.ts", import.meta.url));

/**
 * The client scenarios of @modelcontextprotocol/conformance that apply to this client, run by the
 * package's own CLI against its own servers (offline). Elicitation and the OAuth scenarios do not
 * apply: this client declares no elicitation capability and takes static per-tenant credentials.
 */
describe("MCP conformance, client scenarios", () => {
  for (const scenario of ["initialize", "tools_call", "sse-retry"]) {
    it(`${scenario} passes`, () => {
      const cwd = mkdtempSync(join(tmpdir(), "alma-mcp-conformance-"));
      const tsx = pathToFileURL(`${ROOT}node_modules/tsx/dist/loader.mjs`).href;
      try {
        const run = spawnSync(
          process.execPath,
          [
            "--import",
            HOOK,
            CLI,
            "client",
            "--command",
            `${process.execPath} --conditions=alma-source --import ${tsx} ${CLIENT}`,
            "--scenario",
            scenario,
          ],
          { cwd, encoding: "utf8", timeout: 60_000, env: { ...process.env, NO_COLOR: "1" } },
        );
        expect(`${run.stdout}${run.stderr}`).toMatch(/OVERALL: PASSED/);
        expect(run.status).toBe(0);
      } finally {
        rmSync(cwd, { recursive: true, force: true });
      }
    }, 90_000);
  }
});
