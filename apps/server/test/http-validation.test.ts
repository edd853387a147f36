import { describe, expect, it } from "vitest";
import { call, hostPerTest, SUNRISE } from "./helpers.js";

const startHost = hostPerTest();

const AT = "2026-11-29T10:00:00Z";

describe("every route's declaration checks what it is sent", () => {
  it("answers a bad query parameter 422 in the error shape, naming the rule, never the value", async () => {
    const t = await startHost();
    const admin = (path: string) => call(t.url, path, { token: t.admin });
    for (const days of ["abc", "0", "61", "2.5", "secret-value-42"]) {
      const res = await admin(`/v1/admin/spend?days=${days}`);
      expect(res.status, days).toBe(422);
      expect(res.body).toMatchObject({ error: { code: "invalid_input" } });
      const { message } = (res.body as { error: { message: string } }).error;
      expect(message).toMatch(/^query\.days: /);
      expect(message).not.toContain("secret-value-42");
    }
    expect((await admin("/v1/admin/spend?days=7")).status).toBe(200);
    expect((await admin("/v1/admin/spend")).status).toBe(200);
    const state = await admin("/v1/admin/routines/runs?state=sleeping");
    expect(state.status).toBe(422);
    expect(state.body).toMatchObject({ error: { code: "invalid_input" } });
    expect((await admin("/v1/admin/uncertain?org=.hidden")).status).toBe(422);
    // A query parameter a route does not declare is ignored, as a cache buster would be.
    expect((await admin("/v1/admin/uncertain?_=123")).status).toBe(200);
  });

  it("answers a path parameter that cannot name anything 422 invalid_id", async () => {
    const t = await startHost();
    const token = await t.token();
    const turn = await call(t.url, "/v1/turns/has%20space", { token });
    expect(turn.status).toBe(422);
    expect(turn.body).toMatchObject({ error: { code: "invalid_id" } });
    const org = await call(t.url, "/v1/admin/tenants/.hidden/sessions", { token: t.admin });
    expect(org.status).toBe(422);
    const slot = await call(t.url, `/v1/admin/routines/${SUNRISE}/r1/runs/soon/resolve`, {
      token: t.admin,
      body: { action: "abandon" },
    });
    expect(slot.status).toBe(422);
    expect(slot.body).toMatchObject({ error: { code: "invalid_id" } });
  });

  it("answers a body field of the wrong type or name 422, naming what the route takes", async () => {
    const t = await startHost();
    const mint = (body: unknown) => call(t.url, "/v1/admin/tokens", { token: t.admin, body });
    const ttl = await mint({ org: SUNRISE, uid: "p-1001", ttlSeconds: "soon" });
    expect(ttl.status).toBe(422);
    expect(ttl.body).toMatchObject({ error: { code: "invalid_input" } });
    expect((ttl.body as { error: { message: string } }).error.message).toMatch(/^body\.ttlSeconds/);
    expect((await mint({ org: SUNRISE, uid: "p-1001", ttlSeconds: 30 })).status).toBe(422);
    const extra = await mint({ org: SUNRISE, uid: "p-1001", admin: true });
    expect(extra.body).toEqual({
      error: { code: "invalid_input", message: "this route takes only org, uid, ttlSeconds" },
    });
    const fence = await call(t.url, `/v1/admin/tenants/${SUNRISE}/fence`, {
      method: "PUT",
      token: t.admin,
      body: { reason: "because" },
    });
    expect(fence.status).toBe(422);
    expect((await mint({ org: SUNRISE, uid: "p-1001" })).status).toBe(201);
    // An event's fields are declared too: one it does not take is refused, never dropped.
    const token = await t.token();
    const events = (e: unknown) =>
      call(t.url, "/v1/sessions/s1/events", { token, body: { events: [e] } });
    const blocks = [{ type: "text", text: "Hi" }];
    const event = { id: "e1", at: AT, kind: "message", role: "assistant", blocks };
    const extraField = await events({ ...event, note: "kept?" });
    expect(extraField.status).toBe(422);
    expect(extraField.body).toMatchObject({ error: { code: "invalid_input" } });
    expect((await events(event)).status).toBe(200);
  });

  it("checks the token before any parameter or body: a stranger learns nothing of the rules", async () => {
    const t = await startHost();
    const spend = await call(t.url, "/v1/admin/spend?days=abc");
    expect(spend.status).toBe(401);
    const turn = await call(t.url, "/v1/turns/has%20space");
    expect(turn.status).toBe(401);
    const tenantAsAdmin = await call(t.url, "/v1/admin/spend?days=abc", {
      token: await t.token(),
    });
    expect(tenantAsAdmin.status).toBe(401);
  });

  it("refuses a path that is not valid percent-encoding 400, and serves HEAD where GET is", async () => {
    const t = await startHost();
    const bad = await call(t.url, "/v1/turns/%E2%9C", { token: await t.token() });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: { code: "bad_request" } });
    const head = await fetch(`${t.url}/healthz`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    const wrong = await call(t.url, "/openapi.json", { method: "DELETE" });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("GET");
  });

  it("logs each request under its route's pattern, never its path", async () => {
    const lines: { method: string; route: string; status: number }[] = [];
    const t = await startHost({ log: (line) => lines.push(line) });
    const token = await t.token();
    await call(t.url, "/v1/sessions/secret-session/turns", {
      token,
      body: { input: "hi" },
      headers: { "idempotency-key": "k1" },
    });
    await call(t.url, "/v1/turns/has%20space", { token });
    await call(t.url, "/nowhere/secret");
    expect(lines.map(({ method, route, status }) => `${method} ${route} ${status}`)).toEqual([
      "POST /v1/sessions/:sessionId/turns 200",
      "GET /v1/turns/:rootKey 422",
      "GET - 404",
    ]);
  });
});
