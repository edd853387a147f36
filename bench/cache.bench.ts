// Token economics of a 30-turn clinic session (issue 16, item 5). Run: npm run bench:cache.
// The session runs through the real runtime and the real Anthropic adapter, over real HTTP, against
// a local server that scripts the model and bills usage as the provider's prompt cache would
// (bench/cache/model.ts). Prints, per cache configuration, the share of input billed as cache
// reads, writes by TTL, where prefixes broke, the cache-hygiene guard's warnings and the cost
// against a naive harness that sends the same prompts uncached. Asserts no timing.
// BENCH_CACHE_STRICT=1 exits non-zero when a target is missed.
import type { CacheTtl, ModelClient, PriceTable } from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import { cacheHygieneGuard } from "@alma-harness/loop";
import {
  ANTHROPIC_PRICES,
  createAnthropicClient,
  createOpenAIChatClient,
  createOpenAIResponsesClient,
  OPENAI_PRICES,
} from "@alma-harness/providers";
import { memory } from "@alma-harness/runtime";
import { startAnthropicCacheServer } from "./cache/anthropic-server.js";
import {
  startOpenAIChatCacheServer,
  startOpenAIResponsesCacheServer,
  startOpenAIResponsesNativeCacheServer,
} from "./cache/openai-server.js";
import type { CacheServer, RequestRecord, ServerOptions } from "./cache/server.js";
import {
  CLINIC_GAPS_S,
  CLINIC_INPUTS,
  CLINIC_PROMPT,
  CLINIC_TOOLS,
  clinicModel,
} from "./cache/clinic.js";
import { selfCheck } from "./cache/model.js";

/** Anthropic's minimum cacheable prompt for Sonnet 4.5 (prompt-caching page), and OpenAI's 1,024-token floor. */
const MINIMUM_TOKENS = 1024;

interface Provider {
  readonly name: string;
  readonly model: string;
  readonly prices: PriceTable;
  start(opts: ServerOptions): Promise<CacheServer>;
  client(url: string): ModelClient;
}
const ANTHROPIC: Provider = {
  name: "anthropic",
  model: "claude-sonnet-4-5",
  prices: ANTHROPIC_PRICES,
  start: startAnthropicCacheServer,
  client: (url) => createAnthropicClient({ apiKey: "bench-key", baseURL: url }),
};
const OPENAI_CHAT: Provider = {
  name: "openai chat",
  model: "gpt-5",
  prices: OPENAI_PRICES,
  start: startOpenAIChatCacheServer,
  client: (url) => createOpenAIChatClient({ apiKey: "bench-key", baseURL: url }),
};
const OPENAI_RESPONSES: Provider = {
  name: "openai responses",
  model: "gpt-5",
  prices: OPENAI_PRICES,
  start: startOpenAIResponsesCacheServer,
  client: (url) =>
    createOpenAIResponsesClient({
      apiKey: "bench-key",
      baseURL: url,
      reasoningModels: () => false,
    }),
};
const OPENAI_RESPONSES_NATIVE: Provider = {
  name: "openai responses (tool search)",
  model: "gpt-5.4",
  prices: OPENAI_PRICES,
  start: startOpenAIResponsesNativeCacheServer,
  client: (url) =>
    createOpenAIResponsesClient({
      apiKey: "bench-key",
      baseURL: url,
      reasoningModels: () => false,
    }),
};
const TARGET_READS = 0.9;
const TARGET_COST = 0.3;

interface Config {
  readonly label: string;
  readonly provider: Provider;
  readonly cache: { readonly ttl: CacheTtl; readonly tailTtl?: CacheTtl } | false;
  /** Whether the targets apply (the Anthropic rows). */
  readonly targeted: boolean;
}
const CONFIGS: readonly Config[] = [
  { label: "anthropic, 5m writes", provider: ANTHROPIC, cache: { ttl: "5m" }, targeted: true },
  { label: "anthropic, 1h writes", provider: ANTHROPIC, cache: { ttl: "1h" }, targeted: true },
  {
    label: "anthropic, 1h prefix + 5m tail",
    provider: ANTHROPIC,
    cache: { ttl: "1h", tailTtl: "5m" },
    targeted: false,
  },
  { label: "openai chat, automatic", provider: OPENAI_CHAT, cache: false, targeted: false },
  {
    label: "openai responses, automatic",
    provider: OPENAI_RESPONSES,
    cache: false,
    targeted: false,
  },
  {
    label: "openai responses gpt-5.4, native tool search",
    provider: OPENAI_RESPONSES_NATIVE,
    cache: false,
    targeted: false,
  },
];

interface Figures {
  readonly label: string;
  readonly targeted: boolean;
  readonly model: string;
  readonly requests: number;
  readonly prompt: number;
  readonly readShare: number;
  /** The most any harness could read on these prompts with one TTL (see `readCeiling`). */
  readonly ceiling?: number;
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
  const { provider } = config;
  const server = await provider.start({
    now: () => clock.now(),
    minimumTokens: MINIMUM_TOKENS,
    respond: clinicModel,
  });
  try {
    const client = provider.client(server.url);
    const rt = memory({
      clients: [client],
      policy: {
        resolve: () => ({
          clientId: client.id,
          model: provider.model,
          maxOutputTokens: 1024,
          cache: config.cache,
        }),
      },
      prompt: CLINIC_PROMPT,
      tools: CLINIC_TOOLS,
      prices: provider.prices,
      policyVersion: "bench",
      priceVersion: provider.prices.version,
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
      const view = await rt.runner.runTurn({
        scope,
        sessionId: "visit-1",
        idempotencyKey: `k${i}`,
        input: CLINIC_INPUTS[i] as string,
        intent: { tier: "balanced", sensitivity: "internal" },
      });
      if (view.status !== "completed")
        throw new Error(`turn ${i}: ${view.status} ${JSON.stringify(view).slice(0, 400)}`);
      clock.advance((CLINIC_GAPS_S[i] ?? 0) * 1000);
    }
    const context = await rt.stores.audit.query(scope, { trail: "context", limit: 500 });
    const warnings = context.items.flatMap((e) =>
      e.trail === "context" && e.decision === "warned" ? [String(e.field)] : [],
    );
    return figures(config, server.records, warnings);
  } finally {
    await server.close();
  }
}

function figures(
  config: Config,
  records: readonly RequestRecord[],
  warnings: readonly string[],
): Figures {
  const { model, prices } = config.provider;
  const rates = prices.models[model]?.rates;
  if (!rates) throw new Error(`${model} has no price row`);
  const sum = (f: (r: RequestRecord) => number) => records.reduce((s, r) => s + f(r), 0);
  const prompt = sum((r) => r.total);
  const read = sum((r) => r.read);
  const write5m = sum((r) => r.write5m);
  const write1h = sum((r) => r.write1h);
  const uncached = sum((r) => r.input);
  const output = sum((r) => r.output);
  // A term with tokens and no rate is a missing price (NaN shows it); no tokens cost nothing.
  const usd = (tokens: number, rate: number | undefined) =>
    tokens === 0 ? 0 : (tokens * (rate ?? Number.NaN)) / 1e6;
  const costUsd =
    usd(uncached, rates.input) +
    usd(write5m, rates.cacheWrite5m) +
    usd(write1h, rates.cacheWrite1h) +
    usd(read, rates.cacheRead) +
    usd(output, rates.output);
  const naiveUsd = usd(prompt, rates.input) + usd(output, rates.output);
  const ceiling =
    config.cache && config.cache.tailTtl === undefined
      ? readCeiling(records, TTL_MS[config.cache.ttl])
      : undefined;
  const breaks: Record<string, number> = {};
  for (const r of records) if (r.brokeAt) breaks[r.brokeAt] = (breaks[r.brokeAt] ?? 0) + 1;
  return {
    label: config.label,
    targeted: config.targeted,
    model: `${model} at ${prices.version}`,
    requests: records.length,
    prompt,
    readShare: read / prompt,
    ...(ceiling !== undefined ? { ceiling } : {}),
    write5m,
    write1h,
    uncached,
    breaks,
    costUsd,
    naiveUsd,
    warnings,
  };
}

const TTL_MS: Record<CacheTtl, number> = { "5m": 300_000, "1h": 3_600_000 };

/**
 * The read share no harness can beat on these prompts with entries of one TTL: a request can read
 * at most the previous request's whole prompt, and nothing when the pause since it outlasted the
 * TTL (every entry was last refreshed by that request); every other token is written or sent
 * uncached. The first request reads nothing.
 */
function readCeiling(records: readonly RequestRecord[], ttlMs: number): number {
  let readable = 0;
  for (let i = 1; i < records.length; i++) {
    const [prev, cur] = [records[i - 1] as RequestRecord, records[i] as RequestRecord];
    if (cur.at - prev.at <= ttlMs) readable += Math.min(prev.total, cur.total);
  }
  const prompt = records.reduce((s, r) => s + r.total, 0);
  return prompt === 0 ? 0 : readable / prompt;
}

function print(rows: readonly Figures[]): boolean {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const lines = [
    "| configuration | requests | prompt tokens | read share | read ceiling | 5m writes | 1h writes | uncached | prefix breaks (pairs) | cost | naive | cost ÷ naive | guard warnings |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|",
  ];
  let met = true;
  for (const f of rows) {
    const ratio = f.costUsd / f.naiveUsd;
    if (f.targeted && (f.readShare < TARGET_READS || ratio > TARGET_COST)) met = false;
    const breaks =
      Object.entries(f.breaks)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ") || "none";
    const warned = f.warnings.length
      ? f.warnings.map((w) => w.replace("cache_hygiene:", "")).join(", ")
      : "none";
    lines.push(
      `| ${f.label} | ${f.requests} | ${f.prompt} | ${pct(f.readShare)} | ${f.ceiling !== undefined ? pct(f.ceiling) : "—"} | ${f.write5m} | ${f.write1h} | ${f.uncached} | ${breaks} (of ${f.requests - 1}) | $${f.costUsd.toFixed(4)} | $${f.naiveUsd.toFixed(4)} | ${ratio.toFixed(2)}× | ${warned} |`,
    );
  }
  const models = [...new Set(rows.map((r) => r.model))].join(", ");
  console.log(
    `30-turn clinic session, ${CLINIC_TOOLS.length} tools (${CLINIC_TOOLS.filter((t) => t.deferred).length} deferred); ${models}; minimum cacheable ${MINIMUM_TOKENS} tokens`,
  );
  console.log(lines.join("\n"));
  console.log(
    `targets (anthropic 5m and 1h rows): read share ≥ ${pct(TARGET_READS)} and cost ≤ ${TARGET_COST}× naive: ${met ? "met" : "NOT met"}`,
  );
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
