import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scriptedHang } from "@alma-harness/loop/testing";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { describe, expect, it } from "vitest";
import { defaultAllowedHosts, parseAllowedHosts, SECURITY_HEADERS } from "../src/http/hardening.js";
import { sqlitePath } from "../src/runtime.js";
import {
  ANA,
  call,
  fakeSetup,
  hostPerTest,
  pendingAsk,
  SUNRISE,
  type TestHost,
  turn,
} from "./helpers.js";

const startHost = hostPerTest();

function portOf(t: TestHost): number {
  return Number(new URL(t.url).port);
}

/** A raw TCP client: what it received, the socket errors it saw (a reset), and when it closed. */
function rawClient(t: TestHost): {
  socket: Socket;
  received: () => string;
  closed: Promise<void>;
  errors: string[];
} {
  const socket = connect(portOf(t), "127.0.0.1");
  let text = "";
  const errors: string[] = [];
  socket.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
  });
  socket.on("error", (error: NodeJS.ErrnoException) => errors.push(error.code ?? error.message));
  const closed = once(socket, "close").then(() => undefined);
  return { socket, received: () => text, closed, errors };
}

/** Raw HTTP/1.1 request text. */
function head(method: string, path: string, headers: Record<string, string>): string {
  return `${method} ${path} HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("")}\r\n`;
}

describe("socket limits", () => {
  it("closes a slow-body socket (headers sent, the body dribbled) within the request timeout", async () => {
    const t = await startHost({
      limits: { headersTimeoutMs: 200, requestTimeoutMs: 400, checkEveryMs: 50 },
    });
    const token = await t.token();
    const client = rawClient(t);
    await once(client.socket, "connect");
    const bodyBytes = 10_000;
    client.socket.write(
      head("POST", "/v1/sessions/s1/turns", {
        host: `127.0.0.1:${portOf(t)}`,
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "idempotency-key": "slow-1",
        "content-length": String(bodyBytes),
      }),
    );
    // One byte every 20 ms: the body would take 200 s. The server must close long before.
    let sent = 0;
    let closedByServer = false;
    void client.closed.then(() => {
      closedByServer = true;
    });
    while (!closedByServer && sent < bodyBytes) {
      if (!client.socket.destroyed) client.socket.write("{");
      sent += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(closedByServer).toBe(true);
    expect(sent).toBeLessThan(bodyBytes);
    // Node answers 408 before closing; nothing reached the runner.
    expect(client.received()).toMatch(/^HTTP\/1\.1 408/);
    expect(t.calls()).toBe(0);
    expect(
      await t.host.context.runtime.stores.admissions.holder({ org: SUNRISE, uid: ANA }, "s1"),
    ).toBeUndefined();
  });

  it("closes a socket whose headers never finish within the headers timeout", async () => {
    const t = await startHost({
      limits: { headersTimeoutMs: 200, requestTimeoutMs: 400, checkEveryMs: 50 },
    });
    const client = rawClient(t);
    await once(client.socket, "connect");
    client.socket.write("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    await client.closed;
    expect(client.received()).not.toContain("200 OK");
  });

  it("serves at most maxConnections: one over is answered 503 with Retry-After and closed, never reset", async () => {
    const cap = 3;
    const t = await startHost({ limits: { maxConnections: cap } });
    const token = await t.token();
    const open = await fillCap(t, cap);
    // A turn on a connection over the cap: a typed, retryable 503; nothing reaches the runner.
    const over = rawClient(t);
    await once(over.socket, "connect");
    const body = JSON.stringify({ input: "hello" });
    over.socket.write(
      head("POST", "/v1/sessions/s1/turns", {
        host: "127.0.0.1",
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "idempotency-key": "over-1",
        "content-length": String(body.length),
      }) + body,
    );
    await over.closed;
    expect(over.errors).toEqual([]);
    const answer = over.received();
    expect(answer).toMatch(/^HTTP\/1\.1 503/);
    expect(answer.toLowerCase()).toContain("\r\nretry-after: 1\r\n");
    expect(answer.toLowerCase()).toContain("\r\nconnection: close\r\n");
    expect(answer.toLowerCase()).toContain("x-content-type-options: nosniff");
    expect(answer).toContain('"code":"over_capacity"');
    expect(t.calls()).toBe(0);
    expect(
      await t.host.context.runtime.stores.admissions.holder({ org: SUNRISE, uid: ANA }, "s1"),
    ).toBeUndefined();
    // Each of the capped connections is still served.
    for (const c of open) {
      c.socket.write(head("GET", "/healthz", { host: "127.0.0.1", connection: "close" }));
      await c.closed;
      expect(c.received()).toMatch(/^HTTP\/1\.1 200/);
    }
  });

  it("answers /healthz over the cap (then closes), and closes an over-cap socket that sends nothing", async () => {
    const cap = 2;
    // The default timeouts (headers 10 s): only the over-cap fuse (2 s) closes the silent one below.
    const t = await startHost({ limits: { maxConnections: cap } });
    const open = await fillCap(t, cap);
    const health = rawClient(t);
    health.socket.write(head("GET", "/healthz", { host: "127.0.0.1" }));
    await health.closed;
    expect(health.errors).toEqual([]);
    expect(health.received()).toMatch(/^HTTP\/1\.1 200/);
    expect(health.received().toLowerCase()).toContain("\r\nconnection: close\r\n");
    expect(health.received()).toContain('{"ok":true}');
    // Over the cap, the Host check still holds.
    const rebind = rawClient(t);
    rebind.socket.write(head("GET", "/healthz", { host: "rebind.attacker.example" }));
    await rebind.closed;
    expect(rebind.received()).toMatch(/^HTTP\/1\.1 421/);
    // Silent over the cap: answered a bare 503 and closed by its fuse, as a slow client is.
    const silent = rawClient(t);
    await once(silent.socket, "connect");
    await silent.closed;
    expect(silent.errors).toEqual([]);
    expect(silent.received()).toMatch(/^HTTP\/1\.1 503 .*\r\nRetry-After: 1\r\n/s);
    for (const c of open) c.socket.destroy();
  });
});

/** Opens `n` raw connections and waits until the host has accepted all of them (they hold the cap). */
async function fillCap(t: TestHost, n: number): Promise<ReturnType<typeof rawClient>[]> {
  const open = Array.from({ length: n }, () => rawClient(t));
  await Promise.all(open.map((c) => once(c.socket, "connect")));
  // Accepting is asynchronous to connecting.
  while ((await connections(t.server)) < n) await new Promise((resolve) => setImmediate(resolve));
  return open;
}

function connections(server: TestHost["server"]): Promise<number> {
  return new Promise((resolve) => server.getConnections((_e, n) => resolve(n)));
}

describe("security headers", () => {
  it("every answer carries nosniff and the standard headers; API answers are not cached", async () => {
    const t = await startHost();
    const token = await t.token();
    const answers = [
      await call(t.url, "/healthz"),
      await call(t.url, "/v1/no-such-route"),
      await call(t.url, "/v1/me", { token }),
      await turn(t, token, "s1", "k1", "When are you open?"),
      await call(t.url, "/v1/admin/asks", { token: t.admin }),
    ];
    for (const answer of answers) {
      for (const [name, value] of Object.entries(SECURITY_HEADERS))
        expect(answer.headers.get(name)).toBe(value);
      expect(answer.headers.get("cache-control")).toBe("no-store");
      expect(answer.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    }
    const page = await fetch(`${t.url}/`);
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    await page.arrayBuffer();
  });
});

describe("allowed hosts", () => {
  it("bound to loopback, serves the localhost names and refuses any other Host with a typed 421", async () => {
    const t = await startHost();
    for (const host of [`127.0.0.1:${portOf(t)}`, `localhost:${portOf(t)}`, "[::1]"]) {
      const client = rawClient(t);
      client.socket.write(head("GET", "/healthz", { host, connection: "close" }));
      await client.closed;
      expect(client.received()).toMatch(/^HTTP\/1\.1 200/);
    }
    const client = rawClient(t);
    client.socket.write(
      head("GET", "/v1/info", { host: "rebind.attacker.example", connection: "close" }),
    );
    await client.closed;
    expect(client.received()).toMatch(/^HTTP\/1\.1 421/);
    expect(client.received()).toContain('"code":"host_not_allowed"');
    expect(client.received()).not.toContain("attacker");
    // A Host no URL can be built from is the client's error, typed, with the standard headers.
    const broken = rawClient(t);
    broken.socket.write(head("GET", "/healthz", { host: "bad host^name", connection: "close" }));
    await broken.closed;
    expect(broken.received()).toMatch(/^HTTP\/1\.1 400/);
    expect(broken.received().toLowerCase()).toContain("x-content-type-options: nosniff");
  });

  it("takes a configured list, or any name", async () => {
    const t = await startHost({ allowedHosts: parseAllowedHosts("alma.clinic.example") });
    const ok = rawClient(t);
    ok.socket.write(head("GET", "/healthz", { host: "alma.clinic.example", connection: "close" }));
    await ok.closed;
    expect(ok.received()).toMatch(/^HTTP\/1\.1 200/);
    const refused = rawClient(t);
    refused.socket.write(
      head("GET", "/healthz", { host: `127.0.0.1:${portOf(t)}`, connection: "close" }),
    );
    await refused.closed;
    expect(refused.received()).toMatch(/^HTTP\/1\.1 421/);
    expect(parseAllowedHosts(" * ")).toBe("any");
    expect(defaultAllowedHosts("0.0.0.0")).toBe("any");
    expect(defaultAllowedHosts("10.0.0.5")).toEqual(new Set(["10.0.0.5"]));
  });
});

describe("graceful shutdown (in process)", () => {
  it("stops admitting with a typed 503 and keeps a parked ask for the next process to decide", async () => {
    const home = mkdtempSync(join(tmpdir(), "alma-park-"));
    try {
      const t = await startHost({ store: { home, databaseUrl: undefined } });
      const token = await t.token();
      const parked = await turn(t, token, "s1", "book-1", "Please book an appointment");
      expect([parked.status, parked.body.status]).toEqual([202, "awaiting_approval"]);
      const ask = await pendingAsk(t);
      const closing = t.host.close(5_000);
      // The HTTP core during the drain: a new turn is refused, typed and retryable.
      const refused = await t.host.handle(
        new Request(`${t.url}/v1/sessions/s2/turns`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${token}`,
            "content-type": "application/json",
            "idempotency-key": "k2",
          },
          body: JSON.stringify({ input: "hi" }),
        }),
      );
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("5");
      expect(await refused.json()).toMatchObject({ error: { code: "shutting_down" } });
      // Nobody decided: shutdown denies nothing that can wait in the store.
      expect(await closing).toEqual({ asksDenied: 0, turnsCancelled: 0 });

      const next = await startHost({ store: { home, databaseUrl: undefined } });
      expect((await pendingAsk(next)).id).toBe(ask.id);
      const approve = `/v1/admin/asks/${ask.id}/approve`;
      expect((await call(next.url, approve, { method: "POST", token: next.admin })).status).toBe(
        200,
      );
      await next.host.idle();
      const done = await call(next.url, `/v1/turns/${ask.rootKey}`, { token });
      expect(done.body).toMatchObject({ status: "completed", terminalReason: "terminal_tool" });
      expect(next.host.context.desk.appointmentsOf("sunrise-clinic", "p-1001")).toHaveLength(1);
      await next.host.close(0);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("graceful shutdown: past the grace period", () => {
  it("cancels a turn still running when the grace period ends, and no admission is left held", async () => {
    const home = mkdtempSync(join(tmpdir(), "alma-grace-"));
    try {
      const t = await startHost({
        models: fakeSetup([scriptedHang()]),
        store: { home, databaseUrl: undefined },
      });
      const token = await t.token();
      const started = await turn(t, token, "s1", "hang-1", "hello", { prefer: "respond-async" });
      expect(started.status).toBe(202);
      while (t.calls() < 1) await new Promise((resolve) => setTimeout(resolve, 10));
      const report = await t.host.close(50);
      expect(report).toEqual({ asksDenied: 0, turnsCancelled: 1 });
      expect(t.host.context.turns.size).toBe(0);
      const stores = createSqliteStores({ path: sqlitePath(home) });
      try {
        expect(await stores.admissions.holder({ org: SUNRISE, uid: ANA }, "s1")).toBeUndefined();
      } finally {
        stores.close();
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
