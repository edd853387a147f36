import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ModelClient } from "@alma-harness/core";
import { memory, postgres, type Runtime, type RuntimeConfig, sqlite } from "@alma-harness/runtime";
import { afterAll } from "vitest";

const DATABASE_URL = process.env.ALMA_TEST_DATABASE_URL;

/**
 * The three compositions a runtime test runs on: memory, SQLite in a fresh file, PostgreSQL in a
 * fresh schema pair (enabled when ALMA_TEST_DATABASE_URL is set). Temporary folders go with the file.
 */
export function compositions(prefix: string): readonly [string, (cfg: RuntimeConfig) => Promise<Runtime>, boolean][] {
  const dirs: string[] = [];
  let schemas = 0;
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  return [
    ["memory", async (cfg) => memory(cfg), true],
    [
      "sqlite",
      async (cfg) => {
        const dir = mkdtempSync(join(tmpdir(), `alma-${prefix}-`));
        dirs.push(dir);
        return sqlite({ ...cfg, store: { path: join(dir, "alma.db") } });
      },
      true,
    ],
    [
      "postgres",
      async (cfg) => {
        schemas += 1;
        const suffix = `${process.pid}_${schemas}`;
        return postgres({ ...cfg, store: { connectionString: DATABASE_URL, schema: `${prefix}_${suffix}`, rootSchema: `${prefix}_root_${suffix}`, migrate: true } });
      },
      DATABASE_URL !== undefined,
    ],
  ];
}

export const skipNote = (enabled: boolean) => (enabled ? "" : " (skipped: ALMA_TEST_DATABASE_URL is not set)");

/** A clinic's runner configuration around one model on the `demo` price row ($3 / $15 per Mtok). */
export function clinicConfig(model: ModelClient, over: Partial<RuntimeConfig> = {}): RuntimeConfig {
  return {
    clients: [model],
    policy: { resolve: () => ({ clientId: model.id, model: "demo", maxOutputTokens: 512, cache: false }) },
    prompt: "You are the front desk of a clinic.",
    prices: { version: "p1", models: { demo: { rates: { input: 3, output: 15 } } } },
    policyVersion: "policy-1",
    priceVersion: "p1",
    configRevision: "rev-1",
    resultRetentionMs: 86_400_000,
    runTimeoutMs: 120_000,
    maxCalls: 6,
    maxInputChars: 20_000,
    ...over,
  };
}
