// Token economics of a 30-turn clinic session (issue 16, item 5). Run: npm run bench:cache.
// The session runs through the real runtime and the real Anthropic adapter, over real HTTP, against
// a local server that scripts the model and bills usage as the provider's prompt cache would
// (bench/cache/model.ts). Prints, per cache configuration, the share of input billed as cache
// reads, writes by TTL, where prefixes broke, the cache-hygiene guard's warnings and the cost
// against a naive harness that sends the same prompts uncached. Asserts no timing.
// BENCH_CACHE_STRICT=1 exits non-zero when a target is missed.
import type { CacheTtl } from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import { cacheHygieneGuard } from "@alma-harness/loop";
import { ANTHROPIC_PRICES, createAnthropicClient } from "@alma-harness/providers";
import { memory } from "@alma-harness/runtime";
import { type RequestRecord, startAnthropicCacheServer } from "./cache/anthropic-server.js";
import { CLINIC_GAPS_S, CLINIC_INPUTS, CLINIC_PROMPT, CLINIC_TOOLS, clinicModel } from "./cache/clinic.js";
import { selfCheck } from "./cache/model.js";

const MODEL = "claude-sonnet-4-5";
/** Anthropic's minimum cacheable prompt for Sonnet 4.5 (prompt-caching page, "Cache limitations"). */
const MINIMUM_TOKENS = 1024;
const TARGET_READS = 0.9;
const TARGET_COST = 0.3;

interface Config {
  readonly label: string;
  readonly cache: { readonly ttl: CacheTtl; readonly tailTtl?: CacheTtl };
}
const CONFIGS: readonly Config[] = [
  { label: "5m writes", cache: { ttl: "5m" } },
  { label: "1h writes", cache: { ttl: "1h" } },
  { label: "1h prefix, 5m tail", cache: { ttl: "1h", tailTtl: "5m" } },
];

interface Figures {
  readonly label: string;
  readonly requests: number;
  readonly prompt: number;
  readonly readShare: number;
  readonly write5m: number;
  readonly write1h: number;
  readonly uncached: number;
  readonly breaks: Record<string, number>;
  readonly costUsd: number;
  readonly naiveUsd: number;
  readonly warnings: readonly string[];
}

async function runSession(config: Config): Promise<Figures> {
  const clock = new ManualClock();
  const server = await startAnthropicCacheServer({ now: () => clock.now(), minimumTokens: MINIMUM_TOKENS, respond: clinicModel });
  try {
    const client = createAnthropicClient({ apiKey: "bench-key", baseURL: server.url });
    const rt = memory({
      clients: [client],
      policy: { resolve: () => ({ clientId: client.id, model: MODEL, maxOutputTokens: 1024, cache: config.cache }) },
      prompt: CLINIC_PROMPT,
      tools: CLINIC_TOOLS,
      prices: ANTHROPIC_PRICES,
      policyVersion: "bench",
      priceVersion: ANTHROPIC_PRICES.version,
      configRevision: "bench",
      resultRetentionMs: 24 * 3_600_000,
      runTimeoutMs: 600_000,
      maxCalls: 8,
      maxInputChars: 10_000,
      clock,
      trailKey: "bench-trail-key-at-least-32-bytes-long",
      cacheHygiene: cacheHygieneGuard({ minimumTokens: () => MINIMUM_TOKENS }),
    });
    const scope = { org: "clinic-bench", uid: "patient-1" };
    for (let i = 0; i < CLINIC_INPUTS.length; i++) {
      const view = await rt.runner.runTurn({ scope, sessionId: "visit-1", idempotencyKey: `k${i}`, input: CLINIC_INPUTS[i] as string, intent: { tier: "balanced", sensitivity: "internal" } });
      if (view.status !== "completed") throw new Error(`turn ${i}: ${view.status} ${JSON.stringify(view).slice(0, 400)}`);
      clock.advance((CLINIC_GAPS_S[i] ?? 0) * 1000);
    }
    const context = await rt.stores.audit.query(scope, { trail: "context", limit: 500 });
    const warnings = context.items.flatMap((e) => (e.trail === "context" && e.decision === "warned" ? [String(e.field)] : []));
    return figures(config.label, server.records, warnings);
  } finally {
    await server.close();
  }
}

function figures(label: string, records: readonly RequestRecord[], warnings: readonly string[]): Figures {
  const rates = ANTHROPIC_PRICES.models[MODEL]?.rates;
  if (!rates) throw new Error(`${MODEL} has no price row`);
  const sum = (f: (r: RequestRecord) => number) => records.reduce((s, r) => s + f(r), 0);
  const prompt = sum((r) => r.total);
  const read = sum((r) => r.read);
  const write5m = sum((r) => r.write5m);
  const write1h = sum((r) => r.write1h);
  const uncached = sum((r) => r.input);
  const output = sum((r) => r.output);
  const usd = (tokens: number, rate: number | undefined) => (tokens * (rate ?? Number.NaN)) / 1e6;
  const costUsd = usd(uncached, rates.input) + usd(write5m, rates.cacheWrite5m) + usd(write1h, rates.cacheWrite1h) + usd(read, rates.cacheRead) + usd(output, rates.output);
  const naiveUsd = usd(prompt, rates.input) + usd(output, rates.output);
  const breaks: Record<string, number> = {};
  for (const r of records) if (r.brokeAt) breaks[r.brokeAt] = (breaks[r.brokeAt] ?? 0) + 1;
  return { label, requests: records.length, prompt, readShare: read / prompt, write5m, write1h, uncached, breaks, costUsd, naiveUsd, warnings };
}

function print(rows: readonly Figures[]): boolean {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const lines = [
    "| configuration | requests | prompt tokens | read share | 5m writes | 1h writes | uncached | prefix breaks (pairs) | cost | naive | cost ÷ naive | guard warnings |",
    "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|",
  ];
  let met = true;
  for (const f of rows) {
    const ratio = f.costUsd / f.naiveUsd;
    if (f.readShare < TARGET_READS || ratio > TARGET_COST) met = false;
    const breaks = Object.entries(f.breaks).map(([k, v]) => `${k} ${v}`).join(", ") || "none";
    const warned = f.warnings.length ? f.warnings.map((w) => w.replace("cache_hygiene:", "")).join(", ") : "none";
    lines.push(`| ${f.label} | ${f.requests} | ${f.prompt} | ${pct(f.readShare)} | ${f.write5m} | ${f.write1h} | ${f.uncached} | ${breaks} (of ${f.requests - 1}) | $${f.costUsd.toFixed(4)} | $${f.naiveUsd.toFixed(4)} | ${ratio.toFixed(2)}× | ${warned} |`);
  }
  console.log(`30-turn clinic session, ${CLINIC_TOOLS.length} tools (${CLINIC_TOOLS.filter((t) => t.deferred).length} deferred), ${MODEL} at ${ANTHROPIC_PRICES.version}, minimum cacheable ${MINIMUM_TOKENS} tokens`);
  console.log(lines.join("\n"));
  console.log(`targets: read share ≥ ${pct(TARGET_READS)} and cost ≤ ${TARGET_COST}× naive, in every configuration: ${met ? "met" : "NOT met"}`);
  return met;
}

async function main(): Promise<void> {
  selfCheck();
  const rows: Figures[] = [];
  for (const config of CONFIGS) rows.push(await runSession(config));
  const met = print(rows);
  if (!met && process.env.BENCH_CACHE_STRICT === "1") process.exitCode = 1;
}

await main();
