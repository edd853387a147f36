import { sink } from "./helpers.js";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { runCli } from "../src/cli/main.js";
import { createHost } from "../src/host.js";
import { mintToken } from "../src/http/auth.js";
import { demoSetup } from "../src/models/select.js";
import { hostPerTest, pendingAsk, SECRETS } from "./helpers.js";

const startHost = hostPerTest();

async function cli(argv: string[], opts: { stdin?: string[]; env?: NodeJS.ProcessEnv } = {}) {
  const stdout = sink();
  const stderr = sink();
  const home = mkdtempSync(join(tmpdir(), "alma-cli-"));
  const code = await runCli(argv, {
    stdin: Readable.from(opts.stdin ?? []),
    stdout,
    stderr,
    env: { ALMA_HOME: home, ...opts.env },
    cwd: home,
  });
  return { code, out: stdout.text(), err: stderr.text(), home };
}

const COMMANDS = [
  "serve",
  "chat",
  "asks",
  "console",
  "sessions",
  "trails",
  "fence",
  "erase",
  "routines",
  "migrate",
  "token",
  "doctor",
];

describe("alma CLI", () => {
  it("prints --help for every command and for alma itself", async () => {
    for (const command of COMMANDS) {
      const { code, out } = await cli([command, "--help"]);
      expect(code).toBe(0);
      expect(out).toMatch(new RegExp(`^alma ${command}: `));
      expect(out).toContain("Usage: alma");
    }
    expect((await cli(["--help"])).out).toContain("serve     serve the clinic agent");
  });

  it("fails in one line with a non-zero exit", async () => {
    const unknown = await cli(["frobnicate"]);
    expect(unknown).toMatchObject({
      code: 2,
      err: 'alma: unknown command "frobnicate" (alma --help lists them)\n',
    });
    const flagTypo = await cli(["chat", "--tokn", "x"]);
    expect(flagTypo).toMatchObject({
      code: 1,
      err: "alma chat: unknown option --tokn (see --help)\n",
    });
    const down = await cli(["chat", "--url", "http://127.0.0.1:9", "--token", "x"]);
    expect(down.code).toBe(1);
    expect(down.err.trim().split("\n")).toHaveLength(1);
    expect(down.err).toMatch(/^alma chat: cannot reach the host at http:\/\/127\.0\.0\.1:9/);
    const noKey = await cli(["trails"]);
    expect(noKey).toMatchObject({
      code: 1,
      err: "alma trails: alma trails needs a root key (see --help)\n",
    });
  });

  it("mints a token the host's secret verifies, and creates that secret once", async () => {
    // No host at ALMA_URL: the secret is made here (one beside a running host is refused).
    const { code, out, home } = await cli(["token", "--org", "sunrise-clinic", "--uid", "p-1001"], {
      env: { ALMA_URL: "http://127.0.0.1:9" },
    });
    expect(code).toBe(0);
    const secret = new TextEncoder().encode(readFileSync(join(home, "jwt-secret"), "utf8").trim());
    const { payload } = await jwtVerify(out.trim(), secret);
    expect(payload).toMatchObject({ org: "sunrise-clinic", uid: "p-1001" });
  });

  it("alma chat reads messages from stdin and streams the replies of a running host", async () => {
    const t = await startHost();
    const token = await t.token();
    const { code, out, err } = await cli(
      ["chat", "--url", t.url, "--token", token, "--session", "cli-s1"],
      {
        stdin: ["When are you open on Monday?\n", "\n", "What is on my record?\n"],
      },
    );
    expect(err).toBe("");
    expect(code).toBe(0);
    const lines = out.trim().split("\n");
    expect(lines[0]).toBe(
      "alma chat · Sunrise Family Clinic · p-1001 (Ana Souza) · session cli-s1 · offline demo model (scripted, not an AI)",
    );
    expect(lines.slice(1)).toEqual([
      "you> When are you open on Monday?",
      "assistant> Let me check the opening hours.",
      expect.stringMatching(
        /^assistant> Sunrise Family Clinic is open on monday \d{4}-\d{2}-\d{2} from 08:00 to 18:00\.$/,
      ),
      "you> What is on my record?",
      "assistant> Let me open the record.",
      "assistant> Record of Ana Souza: allergies: penicillin. Notes: Asthma, controlled. Prefers morning visits.",
    ]);
  });

  it("alma chat shows a permission ask, what the terminal tool sent, and operator commands read it back", async () => {
    const t = await startHost();
    const host = t;
    const chat = cli(
      ["chat", "--url", host.url, "--token", await host.token(), "--session", "cli-book"],
      { stdin: ["Please book an appointment\n"] },
    );
    const ask = await pendingAsk(host);
    await cli(["asks", "--url", host.url, "--admin-token", host.admin]).then(({ out }) => {
      expect(out).toMatch(
        new RegExp(`^1 pending ask\\(s\\)\n {2}${ask.id} {2}sunrise-clinic/p-1001`),
      );
      expect(out).toMatch(
        /book_appointment \{"slotId":"[^"]+"\} {2}\(asked \d+ min ago, expires in \d+ min\)/,
      );
    });
    const approved = await cli([
      "asks",
      "approve",
      ask.id,
      "--url",
      host.url,
      "--admin-token",
      host.admin,
    ]);
    expect(approved.out).toBe(`${ask.id}: approved\n`);
    const { out } = await chat;
    expect(out).toContain("  [waiting for the clinic to approve book_appointment]");
    expect(out).toContain("  [the clinic decided; the assistant goes on]");
    expect(out).toMatch(/ {2}\[sent to you\] Confirmed: your appointment on /);

    const sessions = await cli(["sessions", "--url", host.url, "--admin-token", host.admin]);
    expect(sessions.out).toMatch(
      /^sunrise-clinic: 1 session\(s\)\n {2}p-1001 {2}cli-book {2}7 message\(s\)/,
    );
    const trails = await cli([
      "trails",
      ask.rootKey,
      "--url",
      host.url,
      "--admin-token",
      host.admin,
    ]);
    expect(trails.code).toBe(0);
    expect(trails.out).toContain(
      `turn ${ask.rootKey} · sunrise-clinic/p-1001 · session cli-book · completed`,
    );
    expect(trails.out).toMatch(
      /policy {5}permission\.resolved book_appointment book:slot:\S+ → allow by operator/,
    );
    const erase = await cli([
      "erase",
      "--session",
      "cli-book",
      "--url",
      host.url,
      "--token",
      await host.token(),
    ]);
    expect(erase).toMatchObject({ code: 0, out: "erased session cli-book\n" });
  });

  it("alma doctor checks the setup; with no key the live check is skipped and says so", async () => {
    const t = await startHost();
    const { code, out } = await cli(["doctor", "--url", t.url]);
    expect(code).toBe(0);
    expect(out).toContain("provider  offline demo model (no provider key set)");
    expect(out).toContain(`host      ${t.url} answers`);
    expect(out).toMatch(/live {6}skipped {2}anthropic: set ANTHROPIC_API_KEY to check it/);
    const bad = await cli(["doctor", "--url", t.url], {
      env: { ALMA_PROVIDER: "openrouter", ALMA_MODEL_FAST: "nope/unpriced" },
    });
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(/provider {2}error: the fast model "nope\/unpriced" has no price/);
  });

  it("alma migrate brings the embedded store's schema up to date, and says so", async () => {
    const { code, out, home } = await cli(["migrate"]);
    expect(code).toBe(0);
    expect(out).toMatch(
      new RegExp(
        `^SQLite at ${join(home, "alma.db")}: schema version \\d+ \\(root results \\d+\\), up to date\n$`,
      ),
    );
    expect((await cli(["migrate"], { env: { ALMA_HOME: home } })).out).toBe(out);
  });

  it("the alma bin drives chat over a piped stdin", async () => {
    const t = await startHost();
    const bin = fileURLToPath(new URL("../bin/alma.mjs", import.meta.url));
    const child = spawn(
      process.execPath,
      [bin, "chat", "--url", t.url, "--token", await t.token(), "--session", "bin-s1"],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      err += c.toString();
    });
    child.stdin.end("When are you open on Saturday?\n");
    // "close", not "exit": the exit can come before the last of stdout is read.
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(out).toMatch(
      /assistant> Sunrise Family Clinic is open on saturday \S+ from 09:00 to 13:00\./,
    );
  });
  it("alma chat waits on a parked booking across a restart of the host, then prints the answer", async () => {
    const home = mkdtempSync(join(tmpdir(), "alma-cli-restart-"));
    const options = {
      secrets: SECRETS,
      store: { home, databaseUrl: undefined },
      models: demoSetup(),
    };
    const first = await createHost(options);
    const { url } = await first.listen(0, "127.0.0.1");
    const port = Number(new URL(url).port);
    const { token } = await mintToken(SECRETS.jwtSecret, { org: "sunrise-clinic", uid: "p-1001" });
    const chat = cli(["chat", "--url", url, "--token", token, "--session", "cli-restart"], {
      stdin: ["Please book an appointment\n"],
    });
    for (;;) {
      if ((await first.context.asks.pending()).length === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    await first.close(0);
    // The chat keeps trying while the host is down; a new host on the same store and port answers.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const second = await createHost(options);
    await second.listen(port, "127.0.0.1");
    try {
      const [ask] = await second.context.asks.pending();
      expect(await second.context.asks.answer(ask?.id as string, true)).toBe("answered");
      const { code, out } = await chat;
      expect(code).toBe(0);
      expect(out).toContain("  [waiting for the clinic to approve book_appointment]");
      expect(out).toContain("  [the clinic decided; the assistant goes on]");
      expect(out).toMatch(/ {2}\[sent to you\] Confirmed: your appointment on /);
    } finally {
      await second.close(0);
    }
  }, 60_000);
});
