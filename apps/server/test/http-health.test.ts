import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { call, hostPerTest } from "./helpers.js";

const startHost = hostPerTest();
const held: Socket[] = [];
afterEach(() => {
  for (const socket of held.splice(0)) socket.destroy();
});

/** Opens `n` connections to `url` that send half a request line and then nothing (slow clients). */
async function holdConnections(url: string, n: number): Promise<void> {
  const { hostname, port } = new URL(url);
  await Promise.all(
    Array.from({ length: n }, async () => {
      const socket = connect(Number(port), hostname);
      held.push(socket);
      socket.on("error", () => undefined);
      await new Promise((resolve) => socket.once("connect", resolve));
      socket.write("GET /v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    }),
  );
}

describe("the health listener (Host.listenHealth, ALMA_HEALTH_PORT)", () => {
  it("serves /healthz alone: any other path there is 404, the main port serves them", async () => {
    const t = await startHost();
    const health = await t.host.listenHealth(0, "127.0.0.1");
    expect(health.url).not.toBe(t.url);
    const ok = await call(health.url, "/healthz");
    expect([ok.status, ok.body]).toEqual([200, { ok: true }]);
    expect((await call(health.url, "/v1/info")).status).toBe(404);
    const turn = await call(health.url, "/v1/sessions/s1/turns", {
      method: "POST",
      token: await t.token(),
      headers: { "idempotency-key": "k1" },
      body: { input: "When are you open?" },
    });
    expect(turn.status).toBe(404);
    expect(t.calls()).toBe(0);
    expect((await call(t.url, "/v1/info")).status).toBe(200);
  });

  it("answers while slow clients hold every connection of the main port", async () => {
    const t = await startHost({ limits: { maxConnections: 4 } });
    const health = await t.host.listenHealth(0, "127.0.0.1");
    await holdConnections(t.url, 4);
    // The main port is full: a request there is over its cap (only /healthz is served there too).
    expect((await call(t.url, "/v1/info")).status).toBe(503);
    expect((await call(health.url, "/healthz")).status).toBe(200);
  });
});
