/** What the parked-turn contract's groups share: the fixture, its records and helpers. */
import type {
  AdmissionStore,
  ParkedTurnStore,
  ParkInput,
  Scope,
  SessionErasure,
} from "@alma-harness/core";
import { type Closable, type FixtureTest, SCOPE_A, T0 } from "./harness.js";

export interface ParkedFixture extends Closable {
  readonly admissions: AdmissionStore;
  readonly parked: ParkedTurnStore;
  /** Erasing a session removes its parked turns with the rest of its rows. */
  readonly erasure: SessionErasure;
}

export type Declare = FixtureTest<ParkedFixture>;

export const EXPIRES = T0 + 3_600_000;
export const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");
/** A well-formed ask id / digest, distinct per `n`. */
export const askIdOf = (n: number) => `ask_${hex(n, 32)}`;
export const digestOf = (n: number) => hex(n, 64);
export const CONTINUATION = {
  v: 1,
  messages: [{ role: "user", text: "book me at nine" }],
  step: 2,
};

export function askOf(n: number) {
  return {
    askId: askIdOf(n),
    callId: `call-${n}`,
    tool: "book",
    action: "book",
    digest: digestOf(n),
  };
}

export async function admit(fx: ParkedFixture, admissionId: string, over: Partial<AdmitOver> = {}) {
  const r = await fx.admissions.admit({
    scope: over.scope ?? SCOPE_A,
    sessionId: over.sessionId ?? "s1",
    rootKey: over.rootKey ?? "root-1",
    kind: "turn",
    admissionId,
    now: T0,
    deadlineAt: over.deadlineAt ?? T0 + 60_000,
  });
  if (r.status !== "admitted") throw new Error(`fixture: ${admissionId} not admitted`);
  return r.admission;
}

export interface AdmitOver {
  scope: Scope;
  sessionId: string;
  rootKey: string;
  deadlineAt: number;
}

export function parkOf(over: Partial<ParkInput> = {}): ParkInput {
  return {
    scope: SCOPE_A,
    sessionId: "s1",
    rootKey: "root-1",
    admissionId: "a1",
    continuation: CONTINUATION,
    asks: [askOf(1)],
    now: T0 + 10,
    expiresAt: EXPIRES,
    ...over,
  };
}

/** A checkpoint of run `a1` of the fixture's turn. */
export const checkpointOf = (over: Record<string, unknown> = {}) => ({
  scope: SCOPE_A,
  sessionId: "s1",
  rootKey: "root-1",
  admissionId: "a1",
  continuation: CONTINUATION,
  now: T0 + 10,
  ...over,
});

export const OPERATOR = { allowed: true, by: "operator", decidedBy: "nurse-ana" } as const;

export const claimOf = (over: Record<string, unknown> = {}) => ({
  scope: SCOPE_A,
  rootKey: "root-1",
  admissionId: "a2",
  now: T0 + 30,
  deadlineAt: T0 + 600_000,
  ...over,
});
