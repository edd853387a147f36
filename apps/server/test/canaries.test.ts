import { sink } from "./helpers.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { runCli } from "../src/cli/main.js";
import { mintToken } from "../src/http/auth.js";
import { ANA, listeningUrl, logLines, SUNRISE } from "./helpers.js";

/**
 * Canaries through `alma serve` (the real command, in process): a phone number as the session id,
 * the operator token, a tenant token and an unknown field name. None reaches stdout, stderr (the
 * banner, the access log, error logs) or any error body the clients get.
 */
const SESSION = "tel-15550001234";
const OPERATOR = "adm_CANARY_operator_token_7777777777";
const FIELD = "canary_field_5550009999";
const JWT_SECRET = "canary-test-secret-canary-test-secret-0123";

/** `depth` objects nested under the canary key: over the snapshot's depth limit at 70. */
function deep(depth: number): unknown {
  let value: unknown = "x";
  for (let i = 0; i < depth; i++) value = { [FIELD]: value };
  return value;
}

/** The text of a completed turn's answer. */
function replyText(body: string): string {
  const text = (JSON.parse(body) as { text: string }).text;
  expect(text.length).toBeGreaterThan(10);
  return text;
}

describe("host text leaks: canaries", () => {
  it("no session id, token or sent field name reaches the logs or an error body", async () => {
    const home = mkdtempSync(join(tmpdir(), "alma-canary-"));
    const stdout = sink();
    const stderr = sink();
    let stop!: () => void;
    const stopSignal = new Promise<void>((resolve) => {
      stop = resolve;
    });
    const env = {
      ALMA_HOME: home,
      ALMA_PROVIDER: "demo",
      ALMA_ADMIN_TOKEN: OPERATOR,
      ALMA_JWT_SECRET: JWT_SECRET,
      PORT: "0",
    };
    const serving = runCli(["serve"], {
      stdin: Readable.from([]),
      stdout,
      stderr,
      env,
      cwd: home,
      stopSignal,
    });
    try {
      while (listeningUrl(stdout.text()) === undefined)
        await new Promise((resolve) => setTimeout(resolve, 20));
      const url = listeningUrl(stdout.text()) as string;
      const { token } = await mintToken(new TextEncoder().encode(JWT_SECRET), {
        org: SUNRISE,
        uid: ANA,
      });
      const tenant = { authorization: `Bearer ${token}`, "content-type": "application/json" };
      const errors: string[] = [];
      const send = async (path: string, init: RequestInit, expected: number) => {
        const response = await fetch(`${url}${path}`, init);
        const text = await response.text();
        expect(response.status, `${path}: ${text}`).toBe(expected);
        if (expected >= 400) errors.push(text);
        return text;
      };
      const turns = `/v1/sessions/${SESSION}/turns`;
      const answered = await send(
        turns,
        {
          method: "POST",
          headers: { ...tenant, "idempotency-key": "k1" },
          body: JSON.stringify({ input: "When are you open?" }),
        },
        200,
      );
      await send(`/v1/sessions/${SESSION}`, { headers: tenant }, 200);
      await send(
        turns,
        {
          method: "POST",
          headers: { ...tenant, "idempotency-key": "k2" },
          body: JSON.stringify({ input: "hi", [FIELD]: 1 }),
        },
        422,
      );
      const nested = { role: "user", blocks: [{ type: "text", text: "hi" }], [FIELD]: 1 };
      await send(
        turns,
        {
          method: "POST",
          headers: { ...tenant, "idempotency-key": "k3" },
          body: JSON.stringify({ input: nested }),
        },
        422,
      );
      await send(
        turns,
        {
          method: "POST",
          headers: { ...tenant, "idempotency-key": "k4" },
          body: JSON.stringify({ input: deep(70) }),
        },
        422,
      );
      const block = { type: "text", text: "hi", [FIELD]: 1 };
      await send(
        turns,
        {
          method: "POST",
          headers: { ...tenant, "idempotency-key": "k5" },
          body: JSON.stringify({ input: { role: "user", blocks: [block] } }),
        },
        422,
      );
      await send(
        `/v1/sessions/${SESSION}/events`,
        { method: "POST", headers: tenant, body: JSON.stringify({ events: [], [FIELD]: 1 }) },
        422,
      );
      await send(
        `/v1/sessions/${SESSION}/turns`,
        {
          method: "POST",
          headers: {
            authorization: `Bearer ${token}x`,
            "content-type": "application/json",
            "idempotency-key": "k6",
          },
          body: "{}",
        },
        401,
      );
      await send(
        `/v1/admin/tenants/${SUNRISE}/sessions/${ANA}/${SESSION}`,
        { headers: { authorization: `Bearer ${OPERATOR}` } },
        200,
      );
      await send("/v1/admin/asks", { headers: { authorization: `Bearer ${OPERATOR}x` } }, 401);
      await send(`/v1/${SESSION}/nothing`, {}, 404);
      await send(
        `/v1/admin/tokens`,
        {
          method: "POST",
          headers: { authorization: `Bearer ${OPERATOR}`, "content-type": "application/json" },
          body: JSON.stringify({ org: SUNRISE, uid: ANA, [FIELD]: 1 }),
        },
        422,
      );
      stop();
      expect(await serving).toBe(0);
      const logs = stdout.text() + stderr.text();
      // Every line is a JSON log line with a level; the log did run (one line per request), by
      // route pattern.
      const lines = logLines(stdout.text());
      expect(stderr.text()).toBe("");
      expect(lines.every((l) => typeof l.level === "string" && typeof l.msg === "string")).toBe(
        true,
      );
      const requests = lines.filter((l) => l.msg === "request");
      expect(requests).toContainEqual(
        expect.objectContaining({
          level: "info",
          method: "POST",
          route: "/v1/sessions/:sessionId/turns",
          status: 200,
        }),
      );
      expect(requests).toContainEqual(
        expect.objectContaining({ method: "GET", route: "-", status: 404 }),
      );
      for (const canary of [
        SESSION,
        "15550001234",
        OPERATOR,
        token,
        token.slice(-20),
        FIELD,
        "5550009999",
        // Content: the patient's message and the model's reply never reach the log.
        "When are you open?",
        replyText(answered),
      ]) {
        expect(logs, `logs hold ${canary}`).not.toContain(canary);
        for (const body of errors)
          expect(body, `an error body holds ${canary}`).not.toContain(canary);
      }
      // The start says where the operator token is, never what it is.
      expect(lines.find((l) => l.msg === "listening")).toMatchObject({
        secrets: { admin: "in $ALMA_ADMIN_TOKEN" },
      });
    } finally {
      stop();
      await serving.catch(() => undefined);
      rmSync(home, { recursive: true, force: true });
    }
  }, 60_000);
});
