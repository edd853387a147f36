import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { describe, expect, it } from "vitest";

/**
 * The CI helper (scripts/pg-up.sh, pg-down.sh): two runs on one machine never share or stop each
 * other's cluster. Runs real clusters, so it needs the PostgreSQL binaries (PGBIN or Debian's 15).
 */
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PGBIN = process.env.PGBIN ?? "/usr/lib/postgresql/15/bin";
const HAVE_PG = existsSync(join(PGBIN, "initdb"));

interface Run {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

function script(name: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn("bash", [join(ROOT, "scripts", name), ...args], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      err += c.toString();
    });
    // "close", not "exit": the exit can come before the last of stdout is read (seen under load).
    child.on("close", (code) => resolve({ code, out, err }));
  });
}

/** Every cluster directory a test's pg-up printed, stopped after the test whatever happened. */
const started = new Set<string>();

/** The `export NAME='value'` lines pg-up printed. */
function exportsOf(run: Run): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of run.out.matchAll(/^export (\w+)='([^']*)'$/gm))
    out[m[1] as string] = m[2] as string;
  if (out.ALMA_PG_DIR) started.add(out.ALMA_PG_DIR);
  return out;
}

async function stopStarted(): Promise<void> {
  for (const dir of started) if (existsSync(dir)) await script("pg-down.sh", [dir], process.env);
  started.clear();
}

/** A TMPDIR of the test's own; traversable, since as root the clusters run as the postgres user. */
function privateTmp(): string {
  const dir = mkdtempSync(join(tmpdir(), "alma-pg-helper-"));
  chmodSync(dir, 0o755);
  return dir;
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query("select 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

describe.skipIf(!HAVE_PG)("scripts/pg-up.sh and pg-down.sh", () => {
  it("two concurrent runs without ALMA_PG_PORT get clusters of their own; pg-down stops only its own", async () => {
    const tmp = privateTmp();
    const { ALMA_PG_PORT: _p, ALMA_PG_DIR: _d, ALMA_PG_STATE: _s, ...base } = process.env;
    const env = { ...base, TMPDIR: tmp };
    try {
      const [a, b] = await Promise.all([script("pg-up.sh", [], env), script("pg-up.sh", [], env)]);
      exportsOf(a);
      exportsOf(b);
      expect(a.code, a.err).toBe(0);
      expect(b.code, b.err).toBe(0);
      // .ci/run's contract: the URL's export is the last stdout line.
      expect(a.out.trim().split("\n").at(-1)).toMatch(/^export ALMA_TEST_DATABASE_URL=/);
      const ea = exportsOf(a);
      const eb = exportsOf(b);
      expect(ea.ALMA_PG_DIR).not.toBe(eb.ALMA_PG_DIR);
      expect(ea.ALMA_PG_PORT).not.toBe(eb.ALMA_PG_PORT);
      expect(await answers(ea.ALMA_TEST_DATABASE_URL as string)).toBe(true);
      expect(await answers(eb.ALMA_TEST_DATABASE_URL as string)).toBe(true);

      // Nothing named: pg-down guesses nothing and stops nothing.
      expect((await script("pg-down.sh", [], env)).code).toBe(0);
      expect(await answers(eb.ALMA_TEST_DATABASE_URL as string)).toBe(true);

      expect((await script("pg-down.sh", [], { ...env, ALMA_PG_DIR: ea.ALMA_PG_DIR })).code).toBe(
        0,
      );
      expect(existsSync(ea.ALMA_PG_DIR as string)).toBe(false);
      expect(await answers(eb.ALMA_TEST_DATABASE_URL as string)).toBe(true);
      expect((await script("pg-down.sh", [], { ...env, ALMA_PG_PORT: eb.ALMA_PG_PORT })).code).toBe(
        0,
      );
      expect(existsSync(eb.ALMA_PG_DIR as string)).toBe(false);
      expect(existsSync(join(tmp, `alma-pg-${eb.ALMA_PG_PORT}.state`))).toBe(false);
    } finally {
      await stopStarted();
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 120_000);

  it("two concurrent runs on one named port start one cluster and share it", async () => {
    const tmp = privateTmp();
    const { ALMA_PG_DIR: _d, ALMA_PG_STATE: _s, ...base } = process.env;
    const probe = await script("pg-up.sh", [], { ...base, ALMA_PG_PORT: "", TMPDIR: tmp });
    const port = exportsOf(probe).ALMA_PG_PORT as string;
    await script("pg-down.sh", [exportsOf(probe).ALMA_PG_DIR as string], { ...base, TMPDIR: tmp });
    const env = { ...base, TMPDIR: tmp, ALMA_PG_PORT: port };
    try {
      const [a, b] = await Promise.all([script("pg-up.sh", [], env), script("pg-up.sh", [], env)]);
      expect(a.code, a.err).toBe(0);
      expect(b.code, b.err).toBe(0);
      expect(exportsOf(a).ALMA_PG_DIR).toBe(exportsOf(b).ALMA_PG_DIR);
      expect(`${a.err}${b.err}`).toContain("reusing the cluster");
      expect((await script("pg-down.sh", [], env)).code).toBe(0);
      expect(existsSync(exportsOf(a).ALMA_PG_DIR as string)).toBe(false);
    } finally {
      await stopStarted();
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 120_000);
});
