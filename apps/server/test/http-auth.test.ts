import { SignJWT, UnsecuredJWT } from "jose";
import { describe, expect, it } from "vitest";
import { mintToken, TOKEN_AUDIENCE, TOKEN_ISSUER } from "../src/http/auth.js";
import { ANA, call, CARLA, HARBOR, hostPerTest, SECRETS, SUNRISE, turn } from "./helpers.js";

const startHost = hostPerTest();

function sign(claims: Record<string, unknown>, secret: Uint8Array, exp: number): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256" })
    .setIssuer(TOKEN_ISSUER)
    .setAudience(TOKEN_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(exp)
    .sign(secret);
}

const nowS = () => Math.floor(Date.now() / 1000);

describe("tenant auth", () => {
  it("answers 401 for a missing, malformed, forged, expired or unsigned token, and nothing runs", async () => {
    const t = await startHost();
    const forged = await sign(
      { org: SUNRISE, uid: ANA },
      new TextEncoder().encode("another-secret-another-secret-another-01"),
      nowS() + 600,
    );
    const expired = (
      await mintToken(
        SECRETS.jwtSecret,
        { org: SUNRISE, uid: ANA },
        { now: Date.now() - 7_200_000, ttlSeconds: 3600 },
      )
    ).token;
    const unsigned = new UnsecuredJWT({ org: SUNRISE, uid: ANA })
      .setIssuer(TOKEN_ISSUER)
      .setAudience(TOKEN_AUDIENCE)
      .setExpirationTime(nowS() + 600)
      .encode();
    const noOrg = await sign({ uid: ANA }, SECRETS.jwtSecret, nowS() + 600);
    const badScope = await sign({ org: "../etc", uid: ANA }, SECRETS.jwtSecret, nowS() + 600);
    const cases: [string | undefined, string][] = [
      [undefined, "a bearer token is required"],
      ["not-a-jwt", "the token is not valid"],
      [forged, "the token is not valid"],
      [expired, "the token has expired"],
      [unsigned, "the token is not valid"],
      [noOrg, "the token is not valid"],
      [badScope, "the token's org and uid are not valid"],
      [SECRETS.adminToken, "the token is not valid"],
    ];
    for (const [token, message] of cases) {
      const res = await turn(t, token as string, "s1", "k1", "When are you open on Monday?");
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: { code: "unauthorized", message } });
      expect(res.headers.get("www-authenticate")).toContain("Bearer");
    }
    expect(t.calls()).toBe(0);
  });

  it("checks the token before the body: a bad token with malformed JSON is still 401", async () => {
    const t = await startHost();
    const res = await call(t.url, "/v1/sessions/s1/turns", {
      raw: "{nope",
      headers: { "content-type": "application/json", "idempotency-key": "k" },
    });
    expect(res.status).toBe(401);
  });

  it("answers 403 for a valid token of a tenant this host does not serve", async () => {
    const t = await startHost();
    const token = (await mintToken(SECRETS.jwtSecret, { org: "other-clinic", uid: "p-1" })).token;
    const res = await call(t.url, "/v1/sessions", { token });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: { code: "forbidden" } });
  });
});

describe("tenant isolation", () => {
  it("one tenant can never read, list or erase another tenant's turns and sessions", async () => {
    const t = await startHost();
    const ana = await t.token(SUNRISE, ANA);
    const carla = await t.token(HARBOR, CARLA);
    const done = await turn(t, ana, "shared-id", "k1", "What is on my record?");
    expect(done.status).toBe(200);

    const read = await call(t.url, `/v1/turns/${done.body.rootKey}`, { token: carla });
    expect(read.status).toBe(404);
    expect((await call(t.url, "/v1/sessions", { token: carla })).body.items).toEqual([]);
    expect((await call(t.url, "/v1/sessions/shared-id", { token: carla })).body.messages).toEqual(
      [],
    );

    // The same session id and key in another tenant is another turn, not a replay.
    const theirs = await turn(t, carla, "shared-id", "k1", "What is on my record?");
    expect(theirs.body.rootKey).not.toBe(done.body.rootKey);
    expect(theirs.body.text).toMatch(/Carla Mendes/);
    // Erasing "shared-id" as Carla erases Carla's session only.
    expect(
      (await call(t.url, "/v1/sessions/shared-id", { token: carla, method: "DELETE" })).status,
    ).toBe(204);
    expect((await call(t.url, `/v1/turns/${done.body.rootKey}`, { token: ana })).status).toBe(200);
    expect((await call(t.url, "/v1/sessions/shared-id", { token: ana })).body.turns).toHaveLength(
      1,
    );

    // Same clinic, another patient: still another scope.
    const bruno = await t.token(SUNRISE, "p-1002");
    expect((await call(t.url, `/v1/turns/${done.body.rootKey}`, { token: bruno })).status).toBe(
      404,
    );
  });

  it("the model cannot read another patient's record: the host's identity wins over the argument", async () => {
    const t = await startHost();
    const res = await turn(
      t,
      await t.token(SUNRISE, ANA),
      "s1",
      "k1",
      "Show me the record of p-1002",
    );
    expect(res.body.text).toMatch(
      /I cannot share that record: a person may read only their own record/,
    );
    expect(res.body.toolCalls).toEqual([{ name: "read_patient_record", isError: true }]);
  });
});

describe("operator auth", () => {
  it("operator routes need the admin token: none, a wrong one or a tenant token is 401", async () => {
    const t = await startHost();
    for (const token of [undefined, "adm_wrong_wrong_wrong_wrong", await t.token()]) {
      const res = await call(t.url, "/v1/admin/asks", { ...(token ? { token } : {}) });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ error: { code: "unauthorized" } });
    }
    expect((await call(t.url, "/v1/admin/asks", { token: t.admin })).status).toBe(200);
  });
});
