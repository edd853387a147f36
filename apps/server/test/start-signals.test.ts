import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { listeningUrl, logLines } from "./helpers.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const BIN = fileURLToPath(new URL("../bin/alma.mjs", import.meta.url));

interface Case {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly signal: NodeJS.Signals;
  /** The exit code of the signalled process, when it waits for the host (npm does). */
  readonly code?: number;
}

const CASES: readonly Case[] = [
  {
    name: "SIGTERM to npm start's process",
    command: "npm",
    args: ["start", "--silent"],
    signal: "SIGTERM",
    code: 0,
  },
  {
    name: "SIGINT to npm start's process",
    command: "npm",
    args: ["start", "--silent"],
    signal: "SIGINT",
    code: 0,
  },
  // How `npx alma serve` runs the bin: under a shell that dies of the signal and passes nothing on.
  {
    name: "SIGTERM to the shell the alma bin runs under (as npx runs it)",
    command: "sh",
    args: ["-c", `"${process.execPath}" "${BIN}" serve; true`],
    signal: "SIGTERM",
  },
];

/** Whether a process of that id is still there. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * `npm start` under a supervisor (Docker, systemd, PM2) gets its signal on npm's own process, not
 * on the host's. npm forwards it to its script, which `exec`s `scripts/start.mjs`, which forwards it
 * to the host: the host drains (its `stopped` line) and exits, and npm exits 0 after it. Under
 * `npx alma serve` the shell between dies of the signal; the bin sees its parent go and drains the
 * host all the same.
 */
describe("a signal to the process a supervisor started drains the host", () => {
  for (const c of CASES)
    it(c.name, async () => {
      const home = mkdtempSync(join(tmpdir(), "alma-start-"));
      const npm = spawn(c.command, [...c.args], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          ALMA_HOME: home,
          ALMA_PROVIDER: "demo",
          PORT: "0",
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      npm.stdout.on("data", (c: Buffer) => {
        out += c.toString("utf8");
      });
      // "close", not "exit": the host's last lines arrive on the pipe it shares with npm.
      const closed = once(npm, "close") as Promise<[number | null, NodeJS.Signals | null]>;
      let hostPid: number | undefined;
      try {
        while (listeningUrl(out) === undefined) {
          if (npm.exitCode !== null) throw new Error(`${c.command} exited early: ${out}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        const lines = logLines(out.slice(out.indexOf("{")));
        hostPid = lines.find((l) => l.msg === "listening")?.pid as number;
        // A host left behind (the bug this pins) holds the pipe open: the test times out, and
        // this still stops it.
        const pid = hostPid;
        onTestFinished(() => {
          if (alive(pid)) process.kill(pid, "SIGKILL");
        });
        expect(hostPid).not.toBe(npm.pid);
        const health = await fetch(`${listeningUrl(out)}/healthz`);
        expect(health.status).toBe(200);

        npm.kill(c.signal);
        const [code] = await closed;
        if (c.code !== undefined) expect(code).toBe(c.code);
        const after = logLines(out.slice(out.indexOf("{")));
        expect(after.map((l) => l.msg)).toEqual(expect.arrayContaining(["stopping", "stopped"]));
        expect(after.find((l) => l.msg === "stopped")).toMatchObject({ pid: hostPid });
        expect(alive(hostPid)).toBe(false);
      } finally {
        if (npm.exitCode === null) npm.kill("SIGKILL");
        if (hostPid !== undefined && alive(hostPid)) process.kill(hostPid, "SIGKILL");
        rmSync(home, { recursive: true, force: true });
      }
    }, 120_000);
});
