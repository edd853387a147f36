import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { runCli } from "../src/cli/main.js";
import { ANA, call, CARLA, HARBOR, hostPerTest, SUNRISE, turn } from "./helpers.js";

const startHost = hostPerTest();

async function cli(argv: string[]) {
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks: Buffer[] = [];
  const errs: Buffer[] = [];
  out.on("data", (c: Buffer) => chunks.push(c));
  err.on("data", (c: Buffer) => errs.push(c));
  const home = mkdtempSync(join(tmpdir(), "alma-fence-cli-"));
  const code = await runCli(argv, {
    stdin: Readable.from([]),
    stdout: out,
    stderr: err,
    env: { ALMA_HOME: home },
    cwd: home,
  });
  return {
    code,
    out: Buffer.concat(chunks).toString("utf8"),
    err: Buffer.concat(errs).toString("utf8"),
  };
}

describe("the operator's scope fence over HTTP and the CLI", () => {
  it("fences a tenant: its new turns answer 423 scope_fenced, a stored turn replays, erasure works, other tenants run; lift restores", async () => {
    const t = await startHost();
    const admin = (path: string, opts: { method?: string; body?: unknown } = {}) =>
      call(t.url, path, { token: t.admin, ...opts });
    const token = await t.token();
    const done = await turn(t, token, "s1", "k1", "When are you open on Monday?");
    expect(done.status).toBe(200);
    const calls = t.calls();

    const set = await admin(`/v1/admin/tenants/${SUNRISE}/fence`, {
      method: "PUT",
      body: { reason: "suspended" },
    });
    expect(set.status).toBe(201);
    expect(set.body.fence).toMatchObject({ org: SUNRISE, reason: "suspended" });
    expect(
      (
        await admin(`/v1/admin/tenants/${SUNRISE}/fence`, {
          method: "PUT",
          body: { reason: "erasure" },
        })
      ).body.fence,
    ).toMatchObject({ reason: "suspended" });

    const refused = await turn(t, token, "s1", "k2", "Hello again");
    expect(refused.status).toBe(423);
    expect(refused.body).toMatchObject({ error: { code: "scope_fenced" } });
    expect(t.calls()).toBe(calls);
    const replay = await turn(t, token, "s1", "k1", "When are you open on Monday?");
    expect(replay.status).toBe(200);
    expect(replay.body.replayed).toBe(true);
    expect((await turn(t, await t.token(HARBOR, CARLA), "h1", "k1", "Hi")).status).toBe(200);
    expect((await call(t.url, "/v1/sessions/s1", { token, method: "DELETE" })).status).toBeLessThan(
      300,
    );

    expect((await admin(`/v1/admin/tenants/${SUNRISE}/fences`)).body.fences).toEqual([
      expect.objectContaining({ org: SUNRISE, reason: "suspended" }),
    ]);
    expect((await admin(`/v1/admin/tenants/${SUNRISE}/fence`, { method: "DELETE" })).body).toEqual({
      lifted: true,
    });
    expect((await turn(t, token, "s2", "k3", "Hello")).status).toBe(200);
  });

  it("fences one person, refuses bad input and unknown tenants, and requires the admin token", async () => {
    const t = await startHost();
    const admin = (path: string, opts: { method?: string; body?: unknown } = {}) =>
      call(t.url, path, { token: t.admin, ...opts });
    expect(
      (
        await admin(`/v1/admin/tenants/${SUNRISE}/people/${ANA}/fence`, {
          method: "PUT",
          body: { reason: "erasure" },
        })
      ).status,
    ).toBe(201);
    expect((await turn(t, await t.token(), "s1", "k1", "Hi")).status).toBe(423);
    expect((await turn(t, await t.token(SUNRISE, "p-1002"), "s1", "k1", "Hi")).status).toBe(200);
    expect(
      (
        await admin(`/v1/admin/tenants/${SUNRISE}/fence`, {
          method: "PUT",
          body: { reason: "because" },
        })
      ).status,
    ).toBe(422);
    expect(
      (
        await admin(`/v1/admin/tenants/${SUNRISE}/fence`, {
          method: "PUT",
          body: { reason: "suspended", uid: "x" },
        })
      ).status,
    ).toBe(422);
    expect(
      (
        await admin(`/v1/admin/tenants/${SUNRISE}/people/bad%20uid/fence`, {
          method: "PUT",
          body: { reason: "suspended" },
        })
      ).status,
    ).toBe(422);
    expect(
      (
        await admin("/v1/admin/tenants/nope/fence", {
          method: "PUT",
          body: { reason: "suspended" },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await call(t.url, `/v1/admin/tenants/${SUNRISE}/fence`, {
          token: await t.token(),
          method: "PUT",
          body: { reason: "suspended" },
        })
      ).status,
    ).toBe(401);
    expect(
      (await admin(`/v1/admin/tenants/${SUNRISE}/people/${ANA}/fence`, { method: "DELETE" })).body,
    ).toEqual({ lifted: true });
    expect(
      (await admin(`/v1/admin/tenants/${SUNRISE}/people/${ANA}/fence`, { method: "DELETE" })).body,
    ).toEqual({ lifted: false });
  });

  it("alma fence sets, lists and lifts", async () => {
    const t = await startHost();
    const base = ["--url", t.url, "--admin-token", t.admin];
    expect(await cli(["fence", "--org", SUNRISE, "--reason", "suspended", ...base])).toMatchObject({
      code: 0,
      out: expect.stringMatching(/^fenced: sunrise-clinic\/\* {2}suspended {2}since /),
    });
    expect((await cli(["fence", "--org", SUNRISE, ...base])).out).toMatch(
      /^already fenced: sunrise-clinic\/\* {2}suspended/,
    );
    expect(
      (await cli(["fence", "--org", SUNRISE, "--uid", ANA, "--reason", "erasure", ...base])).out,
    ).toMatch(/^fenced: sunrise-clinic\/p-1001 {2}erasure/);
    expect((await cli(["fence", "--org", SUNRISE, "--list", ...base])).out).toMatch(
      /^sunrise-clinic: 2 fence\(s\)\n {2}sunrise-clinic\/\* {2}suspended.*\n {2}sunrise-clinic\/p-1001 {2}erasure/,
    );
    expect((await cli(["fence", "--org", SUNRISE, "--lift", ...base])).out).toBe(
      "lifted the fence on sunrise-clinic/*\n",
    );
    expect((await cli(["fence", "--org", SUNRISE, "--reason", "bogus", ...base])).code).toBe(1);
    expect((await cli(["fence", ...base])).err).toContain("needs --org");
  });
});
