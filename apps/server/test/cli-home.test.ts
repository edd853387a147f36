import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { runCli } from "../src/cli/main.js";
import { listeningUrl, sink } from "./helpers.js";

/** `alma …` in process, from `cwd`, with only `env` (no ALMA_HOME unless given). */
async function alma(argv: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const stdout = sink();
  const stderr = sink();
  const code = await runCli(argv, { stdin: Readable.from([]), stdout, stderr, env, cwd });
  return { code, out: stdout.text(), err: stderr.text() };
}

/** `alma serve` in process from `project` (its home: `project/.alma`), until `stop()`. */
async function serveIn(project: string) {
  const stdout = sink();
  let stop!: () => void;
  const stopSignal = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const env = { ALMA_PROVIDER: "demo", PORT: "0", ALMA_MEMORY: "off" };
  const serving = runCli(["serve"], {
    stdin: Readable.from([]),
    stdout,
    stderr: sink(),
    env,
    cwd: project,
    stopSignal,
  });
  while (listeningUrl(stdout.text()) === undefined)
    await new Promise((resolve) => setTimeout(resolve, 20));
  const halt = () => {
    stop();
    return serving;
  };
  return { url: listeningUrl(stdout.text()) as string, stop: halt };
}

describe("alma from anywhere", () => {
  it("finds the host's .alma up the tree; refuses to make new secrets beside a running host; console prints a link that logs in", async () => {
    const project = mkdtempSync(join(tmpdir(), "alma-project-"));
    const elsewhere = mkdtempSync(join(tmpdir(), "alma-elsewhere-"));
    const host = await serveIn(project);
    try {
      const deep = join(project, "apps", "server");
      mkdirSync(deep, { recursive: true });
      const env = { ALMA_URL: host.url };

      // From a subfolder: the project's secrets, so the running host takes the token.
      const minted = await alma(["token", "--org", "sunrise-clinic", "--uid", "p-1001"], deep, env);
      expect(minted.err).toBe("");
      expect(existsSync(join(deep, ".alma"))).toBe(false);
      const session = await fetch(`${host.url}/v1/sessions/s-home`, {
        headers: { authorization: `Bearer ${minted.out.trim()}` },
      });
      expect(session.status).not.toBe(401);

      // Elsewhere, with no .alma above: new secrets would make tokens this host refuses.
      const refused = await alma(
        ["token", "--org", "sunrise-clinic", "--uid", "p-1001"],
        elsewhere,
        env,
      );
      expect(refused.code).toBe(1);
      expect(refused.err).toContain(`holds no jwt-secret, and a host is running at ${host.url}`);
      expect(refused.err).toContain("set ALMA_HOME to the host's home");
      expect(existsSync(join(elsewhere, ".alma"))).toBe(false);
      // ALMA_HOME names the host's home from anywhere.
      const named = await alma(["token", "--org", "sunrise-clinic", "--uid", "p-1001"], elsewhere, {
        ...env,
        ALMA_HOME: join(project, ".alma"),
      });
      expect(named.code).toBe(0);

      // alma console: a link whose fragment carries a token the host accepts.
      const link = await alma(["console"], deep, env);
      expect(link.code).toBe(0);
      const match = new RegExp(`^${host.url}/#admin=(\\S+)\\n$`).exec(link.out);
      expect(match).not.toBeNull();
      const admin = decodeURIComponent(match?.[1] as string);
      const tenants = await fetch(`${host.url}/v1/admin/tenants`, {
        headers: { authorization: `Bearer ${admin}` },
      });
      expect(tenants.status).toBe(200);
      const wrong = await alma(
        ["console", "--admin-token", "adm_wrong_wrong_wrong_wrong"],
        deep,
        env,
      );
      expect(wrong.code).toBe(1);
      expect(wrong.err).toMatch(/^alma console: .*\(HTTP 401\)\n$/);
    } finally {
      await host.stop();
      rmSync(project, { recursive: true, force: true });
      rmSync(elsewhere, { recursive: true, force: true });
    }
  }, 60_000);

  it("parses flags with node:util: typos, missing values, values on switches, -h", async () => {
    const dir = mkdtempSync(join(tmpdir(), "alma-args-"));
    try {
      expect(await alma(["token", "--org"], dir)).toMatchObject({
        code: 1,
        err: "alma token: --org needs a value\n",
      });
      expect(await alma(["token", "--org", "--uid", "x"], dir)).toMatchObject({
        code: 1,
        err: "alma token: --org needs a value (--org=VALUE when the value starts with -)\n",
      });
      expect(await alma(["serve", "--quiet=yes"], dir)).toMatchObject({
        code: 1,
        err: "alma serve: --quiet takes no value\n",
      });
      expect(await alma(["token", "-x"], dir)).toMatchObject({
        code: 1,
        err: "alma token: unknown option -x (see --help)\n",
      });
      const help = await alma(["console", "-h"], dir);
      expect(help.code).toBe(0);
      expect(help.out).toMatch(/^alma console: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
