import { createHash } from "node:crypto";
import type { UncertainTurnEvent } from "@alma-harness/conversation";
import type { BudgetCapsInput, Clock, IdSource, RoutingIntent } from "@alma-harness/core";
import type { PermissionController, VolatileContext } from "@alma-harness/loop";
import type { RuntimeConfig } from "@alma-harness/runtime";
import type { ModelSetup } from "../models/select.js";
import type { ClinicDesk } from "./clinics.js";
import { BOOK_TOOL, clinicTools, type OwnerOf, SEND_TOOL } from "./tools.js";

export const PROMPT_VERSION = "clinic-front-desk-1";

export const SYSTEM_PROMPT = `You are the front desk assistant of a medical clinic, talking with one of its patients.
You can: tell the clinic's opening hours, find free appointment slots, book a slot (the clinic
approves every booking before it is made), cancel one of the patient's own appointments, and read
the patient's own record (confidential: only when the patient asks about it).
Rules:
- Use the tools; never invent hours, slots, appointments or record contents.
- Book only a slot returned by find_free_slots. If a booking is not approved, say so plainly.
- Read only the record of the patient you are talking with; their id is in the turn's context.
- After a booking or a cancellation succeeds, confirm it with send_message; that ends your turn.
- Answer briefly, in the patient's language, without medical advice.`;

/** Every patient chat runs at this intent: personal data flows through it, so it is confidential. */
export const FRONT_DESK_INTENT: RoutingIntent = Object.freeze({
  tier: "balanced",
  sensitivity: "confidential",
  task: "front-desk",
});

/** The caps the runner enforces: each turn, and each clinic per UTC day (both block). */
export function clinicCaps(caps: {
  readonly perTurnUsd: number;
  readonly perClinicDayUsd: number;
}): BudgetCapsInput {
  return {
    perTurnUsd: caps.perTurnUsd,
    perTenantDayUsd: { usd: caps.perClinicDayUsd, onExceeded: "block" },
  };
}

export interface AgentDeps {
  readonly models: ModelSetup;
  readonly desk: ClinicDesk;
  readonly owner: OwnerOf;
  readonly permissions: PermissionController;
  readonly caps: { readonly perTurnUsd: number; readonly perClinicDayUsd: number };
  readonly onUncertainTurn: (event: UncertainTurnEvent) => void;
  readonly clock?: Clock;
  readonly ids?: IdSource;
  /** How long an operator may take to answer a permission ask; default five minutes. */
  readonly permissionTimeoutMs?: number;
  /**
   * The patient memory (issue 18): with it, each turn recalls the patient's facts and earlier
   * sessions, and each completed turn extracts what the patient told. Absent: the agent forgets.
   */
  readonly memory?: boolean;
  /** How long a parked ask waits for the operator before the kernel denies it; default one hour. */
  readonly approvalTtlMs?: number;
  /** Registers a resumed turn as live (its tools learn the turn's owner from the host). */
  readonly aroundResume?: RuntimeConfig["aroundResume"];
}

/**
 * Recall and extraction for the clinic, over the runtime's own memory stores (the composition binds
 * them): up to 8 facts and 3 earlier sessions of the patient, at or below the chat's sensitivity
 * (confidential), within 2 s; the extraction on the fast tier.
 */
export function clinicMemory(): Pick<RuntimeConfig, "memory"> {
  return {
    memory: {
      recall: { facts: 8, episodes: 3, recallTimeoutMs: 2_000 },
      extraction: { tier: "fast", maxFacts: 8 },
    },
  };
}

/** The turn's harness context: the date, the clinic and who is talking (from the verified scope). */
function volatileFor(desk: ClinicDesk) {
  return (ctx: VolatileContext): string => {
    const clinic = desk.clinic(ctx.scope.org);
    const patient = desk.patient(ctx.scope.org, ctx.scope.uid);
    const today = new Date(ctx.now).toISOString().slice(0, 10);
    return `Today is ${today}. Clinic: ${clinic?.name ?? ctx.scope.org}. You are talking with patient ${ctx.scope.uid}${patient ? ` (${patient.name})` : ""}.`;
  };
}

/**
 * The configuration revision covers everything that changes behavior: the prompt's version, the
 * routes, the price table and the caps. A retry under an old key after a change is a conflict,
 * never a silent replay of a different configuration.
 */
export function configRevision(models: ModelSetup, caps: BudgetCapsInput, memory = false): string {
  const basis = JSON.stringify({
    prompt: PROMPT_VERSION,
    provider: models.provider,
    tiers: models.tiers,
    prices: models.prices.version,
    caps,
    ...(memory ? { memory: "recall-8-3.extract-fast-8" } : {}),
  });
  return `${PROMPT_VERSION}.${createHash("sha256").update(basis).digest("hex").slice(0, 12)}`;
}

/** The example clinic agent, as a host writes it: everything a runtime needs except its stores. */
export function clinicAgent(deps: AgentDeps): RuntimeConfig {
  const caps = clinicCaps(deps.caps);
  return {
    clients: deps.models.clients,
    policy: deps.models.policy,
    prompt: SYSTEM_PROMPT,
    tools: clinicTools(deps.desk, deps.owner),
    terminalTools: [SEND_TOOL],
    permissions: deps.permissions,
    volatile: volatileFor(deps.desk),
    caps,
    prices: deps.models.prices,
    policyVersion: `routing-${deps.models.provider}-1`,
    priceVersion: deps.models.prices.version,
    configRevision: configRevision(deps.models, caps, deps.memory === true),
    ...(deps.memory ? clinicMemory() : {}),
    resultRetentionMs: 30 * 86_400_000,
    runTimeoutMs: 10 * 60_000,
    maxCalls: 6,
    maxInputChars: 4_000,
    limits: { maxToolCalls: 8, permissionTimeoutMs: deps.permissionTimeoutMs ?? 5 * 60_000 },
    onUncertainTurn: deps.onUncertainTurn,
    // A booking's ask parks the turn durably: it survives a restart and any process resumes it.
    asks: "park",
    ...(deps.approvalTtlMs ? { approvalTtlMs: deps.approvalTtlMs } : {}),
    ...(deps.aroundResume ? { aroundResume: deps.aroundResume } : {}),
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.ids ? { ids: deps.ids } : {}),
  };
}

export { BOOK_TOOL };
