import type { ConversationStores } from "@alma-harness/conversation";
import { createGovernedStepRunner, type GovernedStepRunner } from "@alma-harness/single-call";
import type { RuntimeConfig } from "./compose.js";

/**
 * The runtime's step runner: the conversation's own stores (the journal, settlements, spend,
 * audit and root results a turn uses, so erasure, the sweep and `listUnresolved` cover both), and
 * its clients, policy, prices, caps, versions, retention and trail key.
 */
export function stepRunnerOf(
  config: RuntimeConfig,
  stores: ConversationStores,
): GovernedStepRunner {
  return createGovernedStepRunner({
    stores,
    clients: config.clients,
    policy: config.policy,
    prices: config.prices,
    ...(config.caps !== undefined ? { caps: config.caps } : {}),
    policyVersion: config.policyVersion,
    configRevision: config.configRevision,
    ...(config.trailKey !== undefined ? { trailKey: config.trailKey } : {}),
    resultRetentionMs: config.resultRetentionMs,
    ...(config.consumers !== undefined ? { consumers: config.consumers } : {}),
    ...(config.clock !== undefined ? { clock: config.clock } : {}),
  });
}
