import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import type { ModelClient, ModelPolicy, ModelStreamEvent, PriceTable } from "@alma-harness/core";
import { FakeModelClient, type ScriptedResponse, scriptedText } from "@alma-harness/loop/testing";
import { afterEach } from "vitest";
import { readSseEvents, type SseEvent } from "../src/sse-events.js";
import type { HostSecrets } from "../src/config/secrets.js";
import { createHost, type Host, type HostOptions } from "../src/host.js";
import { mintToken } from "../src/http/auth.js";
import { demoSetup, type ModelSetup, tierPolicy } from "../src/models/select.js";

export const SUNRISE = "sunrise-clinic";
export const HARBOR = "harbor-dental";
export const ANA = "p-1001";
export const CARLA = "p-2001";

export const SECRETS: HostSecrets = {
  jwtSecret: new TextEncoder().encode("test-secret-test-secret-test-secret-0123"),
  adminToken: "adm_test_operator_token_0123456789",
  trailKey: "test-trail-key-test-trail-key-0123456789",
  source: { jwt: "test", admin: "test", trail: "test" },
};

export const FAKE_PRICES: PriceTable = {
  version: "fake-1",
  models: { "fake-main": { rates: { input: 3, output: 15 } } },
};

/** Every tier of the host routed to one test client (priced as `fake-main`). */
export function clientSetup(client: ModelClient, policy?: ModelPolicy): ModelSetup {
  const tiers = { fast: "fake-main", balanced: "fake-main", deep: "fake-main" };
  return {
    provider: "demo",
    offlineDemo: false,
    label: "scripted test model",
    clients: [client],
    policy: policy ?? tierPolicy(client.id, tiers),
    prices: FAKE_PRICES,
    tiers,
  };
}

/** A scripted model in place of the demo (for failures the demo never produces). */
export function fakeSetup(
  script: ScriptedResponse[] = [],
  policy?: ModelPolicy,
): ModelSetup & { readonly fake: FakeModelClient } {
  const fake = new FakeModelClient(script);
  return { ...clientSetup(fake, policy), fake };
}

/**
 * A model whose calls wait at a gate until the test lets them through, then answer "ok": turns
 * that run as long as a test needs. `waiting` is how many calls wait now; `pass(n)` lets the first
 * `n` through; `open()` lets every call through, now and later. An aborted call stops waiting.
 */
export class GatedModel implements ModelClient {
  readonly id = "gated";
  readonly provider = "fake";
  calls = 0;
  #open = false;
  readonly #waiting: (() => void)[] = [];

  get waiting(): number {
    return this.#waiting.length;
  }

  validate(): void {}

  pass(n: number): void {
    for (const go of this.#waiting.splice(0, n)) go();
  }

  open(): void {
    this.#open = true;
    this.pass(this.#waiting.length);
  }

  async *stream(_request: unknown, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    this.calls += 1;
    if (!this.#open) {
      await new Promise<void>((resolve) => {
        const go = () => {
          const at = this.#waiting.indexOf(go);
          if (at >= 0) this.#waiting.splice(at, 1);
          resolve();
        };
        this.#waiting.push(go);
        signal.addEventListener("abort", go, { once: true });
      });
    }
    signal.throwIfAborted();
    yield* scriptedText("ok").events;
  }
}

/** The host's models all routed to one `GatedModel`. */
export function gatedSetup(): ModelSetup & { readonly gate: GatedModel } {
  const gate = new GatedModel();
  return { ...clientSetup(gate), gate };
}

/** Resolves once `ready()` holds, checking at every turn of the event loop. */
export async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await new Promise((resolve) => setImmediate(resolve));
}

export interface TestHost {
  readonly host: Host;
  readonly url: string;
  /** The listening `node:http` server. */
  readonly server: import("node:http").Server;
  readonly admin: string;
  /** Dispatches to the model so far (the demo's or the fake's). */
  calls(): number;
  token(org?: string, uid?: string): Promise<string>;
  close(): Promise<void>;
}

/** A host on an ephemeral loopback port with the offline demo model unless `models` says otherwise. */
export async function startHost(
  opts: Partial<Omit<HostOptions, "secrets">> = {},
): Promise<TestHost> {
  const models = opts.models ?? demoSetup();
  const home = mkdtempSync(join(tmpdir(), "alma-host-"));
  const host = await createHost({
    secrets: SECRETS,
    store: { home, databaseUrl: undefined },
    ...opts,
    models,
  });
  const { url, server } = await host.listen(0, "127.0.0.1");
  const counter = models.clients[0] as unknown as { calls: number };
  return {
    host,
    url,
    server,
    admin: SECRETS.adminToken,
    calls: () => counter.calls,
    token: async (org = SUNRISE, uid = ANA) =>
      (await mintToken(SECRETS.jwtSecret, { org, uid })).token,
    close: async () => {
      await host.close(0);
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** `startHost` for the tests of one file: every host a test starts is closed after it, pass or fail. */
export function hostPerTest(): typeof startHost {
  const running: TestHost[] = [];
  afterEach(async () => {
    for (const t of running.splice(0)) await t.close();
  });
  return async (opts) => {
    const t = await startHost(opts);
    running.push(t);
    return t;
  };
}

export interface Call {
  readonly method?: string;
  readonly token?: string;
  readonly body?: unknown;
  readonly raw?: RequestInit["body"];
  readonly headers?: Record<string, string>;
  readonly signal?: AbortSignal;
}

export async function call(
  url: string,
  path: string,
  opts: Call = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const response = await fetch(`${url}${path}`, {
    method: opts.method ?? (opts.body !== undefined || opts.raw !== undefined ? "POST" : "GET"),
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
      ...opts.headers,
    },
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    ...(opts.raw !== undefined ? { body: opts.raw, duplex: "half" } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  } as RequestInit);
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

/** Posts a turn (JSON) under a key. */
export function turn(
  t: TestHost,
  token: string,
  session: string,
  key: string,
  input: unknown,
  headers: Record<string, string> = {},
) {
  return call(t.url, `/v1/sessions/${session}/turns`, {
    token,
    body: { input },
    headers: { "idempotency-key": key, ...headers },
  });
}

/** Opens a turn as SSE and returns the raw response. */
export async function sseTurn(
  t: TestHost,
  token: string,
  session: string,
  key: string,
  input: unknown,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${t.url}/v1/sessions/${session}/turns`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "text/event-stream",
      "idempotency-key": key,
    },
    body: JSON.stringify({ input }),
    ...(signal ? { signal } : {}),
  });
}

/** Reads SSE events until `until` says stop (or the stream ends). */
export async function collect(
  response: Response,
  until: (e: SseEvent) => boolean = () => false,
  comments?: string[],
): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  if (!response.body) return out;
  for await (const e of readSseEvents(response.body, (c) => comments?.push(c))) {
    out.push(e);
    if (until(e)) break;
  }
  return out;
}

/** Pulls events from an open stream until `until` says stop, leaving the stream open. */
export async function pull(
  events: AsyncGenerator<SseEvent>,
  until: (e: SseEvent) => boolean,
): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for (;;) {
    const next = await events.next();
    if (next.done) return out;
    out.push(next.value);
    if (until(next.value)) return out;
  }
}

/** Waits until the host has a pending ask (asks appear as the turn reaches its booking). */
export async function pendingAsk(
  t: TestHost,
): Promise<{ id: string; rootKey: string; org: string; subject?: string }> {
  for (;;) {
    const asks = await t.host.context.asks.pending();
    if (asks[0]) return asks[0];
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A writable that keeps what was written, for a command's stdout and stderr. */
export function sink(): PassThrough & { text(): string } {
  const stream = new PassThrough() as PassThrough & { text(): string };
  const chunks: Buffer[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c));
  stream.text = () => Buffer.concat(chunks).toString("utf8");
  return stream;
}

/** The JSON log lines (pino) in `text`, in order; a line that is not JSON fails the test. */
export function logLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The URL of the host's `listening` log line in `text`, once it is there. */
export function listeningUrl(text: string): string | undefined {
  const line = /^\{.*"msg":"listening".*\}$/m.exec(text)?.[0];
  return line ? ((JSON.parse(line) as { url: string }).url as string) : undefined;
}
