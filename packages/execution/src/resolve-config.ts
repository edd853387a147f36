import {
  normalizePriceTable,
  persistentBlockLimits,
  systemClock,
  validateId,
} from "@alma-harness/core";
import type { GovernedCallsConfig, ResolvedCallsConfig } from "./types.js";
import { LateUsage } from "./late-usage.js";
import { checkConsumers, checkNormalizedCaps } from "./preflight.js";

/** The store methods a `GovernedCalls` calls: a configuration missing one is refused at construction. */
const STORE_METHODS: readonly [keyof GovernedCallsConfig, readonly string[]][] = [
  ["journal", ["claim", "dispatch", "receive", "settle", "complete", "cancelPrepared"]],
  ["settlements", ["settle"]],
  ["spend", ["peek"]],
  ["audit", ["append"]],
];

function positive(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1)
    throw new TypeError(`${name} must be a positive integer`);
  return value;
}

/** The configuration checked once, with what the call derives from it (limits, what it peeks, holds and reserves). */
export function resolveConfig(config: GovernedCallsConfig): ResolvedCallsConfig {
  if (config === null || typeof config !== "object")
    throw new TypeError("GovernedCalls needs a configuration");
  for (const [name, methods] of STORE_METHODS) {
    const store = config[name] as unknown as Record<string, unknown> | undefined;
    if (!store || methods.some((m) => typeof store[m] !== "function"))
      throw new TypeError(`GovernedCalls: ${name} is not a ${name} store`);
  }
  const caps = checkNormalizedCaps(config.caps);
  if (config.cacheKey !== undefined && typeof config.cacheKey !== "function")
    throw new TypeError("GovernedCalls: cacheKey must be a function");
  const limits = persistentBlockLimits(caps);
  const reserves = limits.perSessionUsd !== undefined || limits.perTenantDayUsd !== undefined;
  const { usageInbox, lateUsageGraceMs, ...rest } = config;
  const clock = config.clock ?? systemClock;
  return Object.freeze({
    ...rest,
    late: usageInbox === undefined ? undefined : new LateUsage(usageInbox, clock, lateUsageGraceMs),
    prices: normalizePriceTable(config.prices),
    caps,
    policyVersion: validateId("policyVersion", config.policyVersion),
    consumers: checkConsumers(config.consumers),
    dispatchDeadlineMs: positive("dispatchDeadlineMs", config.dispatchDeadlineMs ?? 15 * 60_000),
    reservationHoldMs: positive("reservationHoldMs", config.reservationHoldMs ?? 86_400_000),
    ...(config.maxRequestChars === undefined
      ? {}
      : { maxRequestChars: positive("maxRequestChars", config.maxRequestChars) }),
    clock,
    limits,
    peeks: caps.perSessionUsd !== undefined || caps.perTenantDayUsd !== undefined,
    blocks: caps.perTurnUsd?.onExceeded === "block" || reserves,
    reserves,
  });
}
