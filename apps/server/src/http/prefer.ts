import { json } from "./errors.js";

/** The most a client may ask to wait with `Prefer: wait=N`: longer is clamped to it (and says so). */
export const MAX_PREFER_WAIT_S = 60;

/**
 * The seconds a `202` asks a client to wait before it reads the turn again (`Retry-After`): a
 * running turn settles within seconds; a parked one waits for a person.
 */
export const RETRY_AFTER_S = { in_progress: 2, awaiting_approval: 10 } as const;

/**
 * How long a request waits for its answer (RFC 7240). `respond-async`: not at all. `wait=N`
 * (seconds): up to N, clamped to `maxMs`; `applied` is what `Preference-Applied` reports. Neither:
 * `fallbackMs`, and nothing applied.
 */
export interface WaitPreference {
  readonly ms: number;
  readonly applied?: string;
}

export function waitPreference(
  request: Request,
  fallbackMs: number,
  maxMs = MAX_PREFER_WAIT_S * 1000,
): WaitPreference {
  const prefer = (request.headers.get("prefer") ?? "").toLowerCase();
  if (/\brespond-async\b/.test(prefer)) return { ms: 0, applied: "respond-async" };
  const m = /\bwait\s*=\s*(\d{1,6})\b/.exec(prefer);
  if (!m) return { ms: fallbackMs };
  const seconds = Math.min(Number(m[1]), Math.floor(maxMs / 1000));
  return { ms: seconds * 1000, applied: `wait=${seconds}` };
}

/**
 * A turn's JSON answer. A 202 says where the turn is read (`Location`) and when to ask
 * (`Retry-After`); `Preference-Applied` reports the wait that bounded it (`respond-async` only on a
 * 202, the one answer that honours it).
 */
export function turnAnswer(
  status: number,
  body: { readonly status: string; readonly rootKey: string },
  pref: WaitPreference,
): Response {
  const headers: Record<string, string> = {};
  if (pref.applied && (status === 202 || pref.applied !== "respond-async"))
    headers["preference-applied"] = pref.applied;
  if (status === 202) {
    headers.location = `/v1/turns/${encodeURIComponent(body.rootKey)}`;
    headers["retry-after"] = String(
      body.status === "awaiting_approval"
        ? RETRY_AFTER_S.awaiting_approval
        : RETRY_AFTER_S.in_progress,
    );
  }
  return json(status, body, headers);
}
