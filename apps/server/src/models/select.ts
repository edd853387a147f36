import type {
  ModelChoice,
  ModelClient,
  ModelJobTransport,
  ModelPolicy,
  PriceTable,
  RoutingIntent,
  Tier,
} from "@alma-harness/core";
import {
  ANTHROPIC_PRICES,
  createAnthropicBatchTransport,
  createAnthropicClient,
  createOpenAIBatchTransport,
  createOpenAIChatClient,
  createOpenAICompatibleClient,
  createOpenRouterClient,
  OPENAI_PRICES,
  OPENROUTER_PRICES,
} from "@alma-harness/providers";
import type { HostEnv, ProviderName } from "../config/env.js";
import { EnvError } from "../config/env.js";
import { DEMO_LABEL, DEMO_MODEL, DEMO_PRICES, DemoModelClient } from "./demo.js";
import { DemoBatchTransport } from "./demo-batch.js";

/** The provider's batch API and the routing policy over it (same tiers, the batch transport's id): the nightly routine's jobs. */
export interface BatchSetup {
  readonly transport: ModelJobTransport;
  readonly policy: ModelPolicy;
}

/** What the host routes to: the clients, the policy over them, their prices and a label for people. */
export interface ModelSetup {
  readonly provider: ProviderName;
  /** True for the offline demo model: every screen says so. */
  readonly offlineDemo: boolean;
  readonly label: string;
  readonly clients: readonly ModelClient[];
  readonly policy: ModelPolicy;
  readonly prices: PriceTable;
  readonly tiers: Readonly<Record<Tier, string>>;
  /** The batch API, where the provider has one (Anthropic, OpenAI, the offline demo); absent, routines run as turns. */
  readonly batch?: BatchSetup;
}

/**
 * The routing policy: a model per tier on one client. Sensitivity routes too: public, internal and
 * confidential data may go to the configured provider; `restricted` (special-category data) has no
 * trusted route here, so such a turn is refused before anything runs (`not_admitted`).
 */
export function tierPolicy(
  clientId: string,
  tiers: Readonly<Record<Tier, string>>,
  opts: { cache?: boolean; maxOutputTokens?: number } = {},
): ModelPolicy {
  return {
    resolve(intent: RoutingIntent): ModelChoice {
      if (intent.sensitivity === "restricted")
        throw new Error("no route is trusted with restricted data");
      return {
        clientId,
        model: tiers[intent.tier],
        maxOutputTokens: opts.maxOutputTokens ?? 1024,
        cache: opts.cache ? { ttl: "5m" } : false,
      };
    },
  };
}

export function demoSetup(): ModelSetup & {
  readonly demo: DemoModelClient;
  readonly batch: BatchSetup & { readonly transport: DemoBatchTransport };
} {
  const demo = new DemoModelClient();
  const tiers = { fast: DEMO_MODEL, balanced: DEMO_MODEL, deep: DEMO_MODEL };
  const transport = new DemoBatchTransport();
  const batch = { transport, policy: tierPolicy(transport.id, tiers) };
  return {
    provider: "demo",
    offlineDemo: true,
    label: DEMO_LABEL,
    clients: [demo],
    policy: tierPolicy(demo.id, tiers),
    prices: DEMO_PRICES,
    tiers,
    demo,
    batch,
  };
}

type Provider = Exclude<ProviderName, "demo">;

interface ProviderPlan {
  readonly defaults: Readonly<Record<Tier, string>>;
  /** Only Anthropic honors explicit cache breakpoints; the other adapters refuse them. */
  readonly cache: boolean;
  readonly prices: PriceTable | undefined;
  readonly client: (env: HostEnv) => ModelClient;
  /** The provider's batch API under the same key as `client` (none: OpenRouter and local servers have none). */
  readonly batch?: (env: HostEnv) => ModelJobTransport;
}

const PLANS: Readonly<Record<Provider, ProviderPlan>> = {
  anthropic: {
    defaults: { fast: "claude-haiku-5-5", balanced: "claude-sonnet-5-5", deep: "claude-opus-5-5" },
    cache: true,
    prices: ANTHROPIC_PRICES,
    client: (env) => createAnthropicClient({ apiKey: env.keys.anthropic }),
    batch: (env) => createAnthropicBatchTransport({ apiKey: env.keys.anthropic }),
  },
  openai: {
    defaults: { fast: "gpt-5-mini", balanced: "gpt-5.4", deep: "gpt-5.5" },
    cache: false,
    prices: OPENAI_PRICES,
    client: (env) => createOpenAIChatClient({ apiKey: env.keys.openai }),
    batch: (env) => createOpenAIBatchTransport({ apiKey: env.keys.openai }),
  },
  openrouter: {
    defaults: {
      fast: "openai/gpt-5-mini",
      balanced: "anthropic/claude-sonnet-4.6",
      deep: "anthropic/claude-sonnet-4.6",
    },
    cache: false,
    prices: OPENROUTER_PRICES,
    client: (env) => createOpenRouterClient({ apiKey: env.keys.openrouter, appName: "alma host" }),
  },
  compat: {
    defaults: { fast: "local-model", balanced: "local-model", deep: "local-model" },
    cache: false,
    prices: undefined,
    client: (env) => {
      if (!env.keys.compatUrl)
        throw new EnvError("ALMA_PROVIDER=compat needs ALMA_OPENAI_COMPAT_URL");
      return createOpenAICompatibleClient({
        baseURL: env.keys.compatUrl,
        ...(env.keys.compatKey ? { apiKey: env.keys.compatKey } : {}),
      });
    },
  },
};

/** A local server's price is the host's declaration (default free); the table covers its models. */
function compatPrices(tiers: Readonly<Record<Tier, string>>, raw: string | undefined): PriceTable {
  const [input, output] = (raw ?? "0,0").split(",").map((v) => Number(v.trim()));
  if (
    input === undefined ||
    output === undefined ||
    !Number.isFinite(input) ||
    !Number.isFinite(output) ||
    input < 0 ||
    output < 0
  ) {
    throw new EnvError("ALMA_OPENAI_COMPAT_PRICE must be `input,output` in USD per million tokens");
  }
  const models: Record<string, { rates: { input: number; output: number } }> = {};
  for (const model of new Set(Object.values(tiers))) models[model] = { rates: { input, output } };
  return { version: `compat-${input}-${output}`, models };
}

/**
 * Builds the provider setup. Every tier's model must be in the provider's price table: an
 * unpriced model would have every call refused, so the host refuses to start instead.
 */
export function providerSetup(env: HostEnv, provider: Provider): ModelSetup {
  const plan = PLANS[provider];
  const compatModel = provider === "compat" ? env.compatModel : undefined;
  const base = compatModel
    ? { fast: compatModel, balanced: compatModel, deep: compatModel }
    : plan.defaults;
  const tiers: Record<Tier, string> = { ...base, ...env.models };
  const prices = plan.prices ?? compatPrices(tiers, env.compatPrice);
  for (const [tier, model] of Object.entries(tiers)) {
    if (!Object.hasOwn(prices.models, model))
      throw new EnvError(
        `the ${tier} model "${model}" has no price in ${prices.version}; pick a priced model with ALMA_MODEL_${tier.toUpperCase()}`,
      );
  }
  const client = plan.client(env);
  const label = `${provider} (${[...new Set(Object.values(tiers))].join(", ")})`;
  const transport = plan.batch?.(env);
  // Batch items carry no cache breakpoints: a batch tier's cache rates are not in every table.
  const batch = transport ? { batch: { transport, policy: tierPolicy(transport.id, tiers) } } : {};
  return {
    provider,
    offlineDemo: false,
    label,
    clients: [client],
    policy: tierPolicy(client.id, tiers, { cache: plan.cache }),
    prices,
    tiers,
    ...batch,
  };
}

export async function selectModels(env: HostEnv): Promise<ModelSetup> {
  return env.provider === "demo" ? demoSetup() : providerSetup(env, env.provider);
}
