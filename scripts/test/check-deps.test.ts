import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), "..", "check-deps.mjs");

/** A small workspace that follows DESIGN.md's table: every file here passes. */
const CLEAN: Readonly<Record<string, string>> = {
  "packages/core/src/index.ts":
    'import { createHash } from "node:crypto";\nexport const h = createHash;\n',
  "packages/execution/src/index.ts": 'import { x } from "@alma-harness/core";\nexport { x };\n',
  "packages/execution/src/testing/index.ts": 'export * from "@alma-harness/core/testing";\n',
  "packages/memory/src/context.ts": 'import "@alma-harness/execution";\n',
  "packages/loop/src/index.ts":
    'import "@alma-harness/core";\nimport "@alma-harness/execution";\nimport { trim } from "@alma-harness/memory/context";\n',
  // Tests may use the whole of a package their source may use a subpath of, and its doubles.
  "packages/loop/test/recall.test.ts":
    'import { recall } from "@alma-harness/memory";\nimport "@alma-harness/memory/testing";\nimport "@alma-harness/testing";\n',
  // Transitive through loop: core, execution and memory/context.
  "packages/conversation/src/index.ts":
    'import "@alma-harness/loop";\nimport "@alma-harness/core/stores";\nimport "@alma-harness/memory/context";\n',
  // Only the trusted packages are held to no-io and no-provider-sdk.
  "packages/providers/src/index.ts":
    'import "@alma-harness/core";\nimport { readFile } from "node:fs/promises";\nimport OpenAI from "openai";\n',
};
const PACKAGES = ["core", "execution", "memory", "loop", "conversation", "providers"];

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A scratch tree under the OS temp dir: the clean workspace plus `extra` files. */
function scratch(extra: Readonly<Record<string, string>> = {}, names = PACKAGES): string {
  const root = mkdtempSync(join(tmpdir(), "alma-check-deps-"));
  roots.push(root);
  for (const name of names) {
    mkdirSync(join(root, "packages", name), { recursive: true });
    writeFileSync(
      join(root, "packages", name, "package.json"),
      JSON.stringify({ name: `@alma-harness/${name}` }),
    );
  }
  for (const [path, text] of Object.entries({ ...CLEAN, ...extra })) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

function check(root: string): { readonly status: number | null; readonly output: string } {
  const run = spawnSync(process.execPath, [SCRIPT, root], { encoding: "utf8" });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe("scripts/check-deps.mjs", () => {
  it("passes a tree that follows DESIGN.md's table", () => {
    const { status, output } = check(scratch());
    expect(output).toContain("dependency direction: ok");
    expect(status).toBe(0);
  });

  it.each([
    // dag: the table as written, subpaths included, transitively.
    ["dag", "packages/loop/src/a.ts", 'import { recall } from "@alma-harness/memory";\n'],
    ["dag", "packages/conversation/src/a.ts", 'export * from "@alma-harness/memory";\n'],
    ["dag", "packages/core/src/a.ts", 'import type { Turn } from "@alma-harness/loop";\n'],
    [
      "dag",
      "packages/execution/src/a.ts",
      'const m = await import("@alma-harness/memory/context");\n',
    ],
    ["dag", "packages/memory/test/a.test.ts", 'import "@alma-harness/conversation";\n'],
    // testing-double: production source outside src/testing/.
    [
      "testing-double",
      "packages/loop/src/a.ts",
      'import { FakeClock } from "@alma-harness/core/testing";\n',
    ],
    // no-io, in each import form.
    ["no-io", "packages/core/src/a.ts", 'import { readFileSync } from "node:fs";\n'],
    ["no-io", "packages/execution/src/a.ts", 'import { readFile } from "fs/promises";\n'],
    ["no-io", "packages/loop/src/a.ts", 'const cp = await import("node:child_process");\n'],
    ["no-io", "packages/conversation/src/a.ts", 'const net = require("net");\n'],
    ["no-io", "packages/core/src/a.ts", 'export { request } from "node:https";\n'],
    ["no-io", "packages/loop/src/a.ts", 'import "node:worker_threads";\n'],
    // no-provider-sdk, by name and by scope.
    ["no-provider-sdk", "packages/loop/src/a.ts", 'import OpenAI from "openai";\n'],
    [
      "no-provider-sdk",
      "packages/execution/src/a.ts",
      'import type { Anthropic } from "@anthropic-ai/sdk";\n',
    ],
    [
      "no-provider-sdk",
      "packages/conversation/src/a.ts",
      'const p = await import("@ai-sdk/openai");\n',
    ],
    [
      "no-provider-sdk",
      "packages/core/src/a.ts",
      'const o = require("@openrouter/ai-sdk-provider");\n',
    ],
    [
      "no-provider-sdk",
      "packages/core/src/testing/a.ts",
      'import { GoogleGenerativeAI } from "@google/generative-ai";\n',
    ],
  ])("fails on [%s] naming the file: %s", (rule, file, text) => {
    const { status, output } = check(scratch({ [file]: text }));
    expect(status).toBe(1);
    expect(output).toMatch(new RegExp(`^${file.replaceAll(".", "\\.")}: .*\\[${rule}[:\\]]`, "m"));
    expect(output).toContain("dependency direction: 1 problem(s)");
  });

  it("fails a workspace that is not in the DAG", () => {
    const root = scratch({}, [...PACKAGES, "unknown"]);
    const { status, output } = check(root);
    expect(status).toBe(1);
    expect(output).toContain("@alma-harness/unknown: not in the DAG");
  });
});
