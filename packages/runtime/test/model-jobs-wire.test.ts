import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { inMemoryStores } from "@alma-harness/core/memory";
import { ManualClock, RecordingAuditLog } from "@alma-harness/core/testing";
import { createAnthropicBatchTransport } from "@alma-harness/providers";
import { modelJobs } from "@alma-harness/runtime";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { dayJob, JOB_KEY, SCOPE } from "./model-jobs-kit.js";
import { runWorker } from "./process-kit.js";
import { WIRE_PRICES } from "./workers/wire-config.js";

const FIXTURES = fileURLToPath(
  new URL("../../providers/test/fixtures/batch/anthropic/", import.meta.url),
);
const fixture = (name: string) => readFileSync(`${FIXTURES}${name}`, "utf8");
const BATCH = "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF";
const PRICES = WIRE_PRICES;

type Route = (req: IncomingMessage, res: ServerResponse) => void;
const servers: { close(): void }[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A real HTTP server on 127.0.0.1 answering the Message Batches routes from the fixtures; `lose` drops the create's answer after reading it. */
async function provider(opts: { readonly lose: boolean }) {
  const seen: string[] = [];
  const routes: Record<string, Route> = {
    "POST /v1/messages/batches": (_req, res) => {
      if (opts.lose) res.socket?.destroy();
      else
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(fixture("batch-created.json"));
    },
    "GET /v1/messages/batches?limit=100": (_req, res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(fixture("batch-list.json")),
    [`GET /v1/messages/batches/${BATCH}`]: (_req, res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(fixture("batch-ended.json")),
    [`GET /v1/messages/batches/${BATCH}/results`]: (_req, res) =>
      res.writeHead(200, { "content-type": "application/binary" }).end(fixture("results.jsonl")),
  };
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const key = `${req.method} ${req.url}`;
      seen.push(key);
      const route = routes[key];
      if (route) route(req, res);
      else res.writeHead(404).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push({ close: () => server.close() });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen };
}

/** The runtime's composition (`modelJobs`) over in-memory stores with a recording audit log. */
function client(url: string) {
  const audit = new RecordingAuditLog();
  const stores = inMemoryStores({ audit });
  const transport = createAnthropicBatchTransport({
    id: "anthropic-batch",
    apiKey: "sk-test",
    baseURL: url,
    fetch,
  });
  const jobs = modelJobs({
    stores,
    prices: PRICES,
    policyVersion: "p",
    trailKey: JOB_KEY,
    transports: [transport],
    policy: {
      resolve: () => ({
        clientId: "anthropic-batch",
        model: "claude-sonnet-4-5",
        maxOutputTokens: 200,
        cache: false,
      }),
    },
    clock: new ManualClock(Date.UTC(2026, 0, 1, 22)),
  });
  return { jobs, stores, audit };
}

describe("a model job end to end over the Anthropic batch wire (a local HTTP server serving the documented shapes)", () => {
  it("the create's answer is lost: the job is found by its custom ids in the listing, never posted again, and each item settles once at the batch price", async () => {
    const wire = await provider({ lose: true });
    const { jobs, stores, audit } = client(wire.url);
    const submitted = await jobs.submit(dayJob("night-1", 4));
    expect(submitted).toMatchObject({
      status: "submitted",
      reconciled: true,
      job: { batchId: BATCH },
    });
    const collected = await jobs.collect(SCOPE, "night-1");
    if (collected.status !== "collected") throw new Error(collected.status);
    expect(wire.seen.filter((r) => r.startsWith("POST"))).toEqual(["POST /v1/messages/batches"]);
    // day-1: 12 in + 29 out at $1.5/$7.5 per million → 18 + 217.5 → 236 micro-dollars (rounded up); day-2: 420 in + 61 out → 630 + 457.5 → 1,088.
    expect(
      collected.items.map((i) => [
        i.customId,
        i.outcome,
        i.receipt.serviceTier,
        i.receipt.usdMicros,
      ]),
    ).toEqual([
      ["day-1", "succeeded", "batch", 236],
      ["day-2", "succeeded", "batch", 1_088],
      ["day-3", "errored", "batch", 0],
      ["day-4", "expired", "batch", 0],
    ]);
    expect((await stores.spend.peek(SCOPE, "patient-1", "2026-01-01")).tenantDayMicros).toBe(
      236 + 1_088,
    );
    expect(audit.trail("cost")).toHaveLength(4);
  });

  it("another OS process collects what this one submitted, from the SQLite file alone: each item settled once, at the batch price", async () => {
    const wire = await provider({ lose: false });
    const dir = mkdtempSync(join(tmpdir(), "alma-jobs-wire-"));
    try {
      const path = join(dir, "alma.db");
      const stores = createSqliteStores({ path, commits: "each" });
      const transport = createAnthropicBatchTransport({
        id: "anthropic-batch",
        apiKey: "sk-test",
        baseURL: wire.url,
        fetch,
      });
      const jobs = modelJobs({
        stores,
        prices: PRICES,
        policyVersion: "p",
        trailKey: JOB_KEY,
        transports: [transport],
        policy: {
          resolve: () => ({
            clientId: "anthropic-batch",
            model: "claude-sonnet-4-5",
            maxOutputTokens: 200,
            cache: false,
          }),
        },
      });
      expect(await jobs.submit(dayJob("night-1", 4))).toMatchObject({
        status: "submitted",
        job: { batchId: BATCH },
      });
      stores.close();
      const run = <T>() =>
        runWorker<T>("collect-worker.ts", { path, url: wire.url, jobId: "night-1" });
      const first = await run<{ status: string; state: string; items: unknown[] }>();
      expect(first).toEqual({
        status: "collected",
        state: "collected",
        items: [
          ["day-1", "succeeded", 236, true],
          ["day-2", "succeeded", 1_088, true],
          ["day-3", "errored", 0, true],
          ["day-4", "expired", 0, true],
        ],
      });
      // A third process collecting again replays: nothing applied twice.
      const again = await run<{ items: unknown[][] }>();
      expect(again.items.map((i) => i[3])).toEqual([false, false, false, false]);
      const reread = createSqliteStores({ path, commits: "each" });
      expect((await reread.settlements.list(SCOPE)).items).toHaveLength(4);
      // The collecting processes run on the system clock: the spend lands on their day, once.
      expect(
        (await reread.spend.tenantDays(SCOPE.org)).reduce((sum, d) => sum + d.usdMicros, 0),
      ).toBe(236 + 1_088);
      reread.close();
      expect(wire.seen.filter((r) => r.startsWith("POST"))).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
