import { createHash } from "node:crypto";
import type { ModelRequest, Usage } from "@alma-harness/core";

/**
 * Why a session keeps cold-writing its prefix, as far as the guard can see it from the requests
 * and the usage (a closed vocabulary; the context trail records `cache_hygiene:<cause>`, never text):
 * - `cache_disabled`: the request carried no cache controls (the route's `cache: false`) and nothing was
 *   read or written in a session that never read from the cache (on an adapter that caches
 *   automatically this is also what a short prompt shows);
 * - `below_minimum`: the prompt is shorter than the model's minimum cacheable prefix, or caching
 *   was asked for and the provider wrote and read nothing in a session that never read;
 * - `tools_changed`: the advertised tools array differs from the previous request's;
 * - `system_changed`: the system blocks differ;
 * - `ttl_mismatch`: the gap since the previous request outlived the TTL its prefix was written with;
 * - `messages_changed`: the previous request's messages are not a prefix of this one's;
 * - `unexplained`: none of the above (the provider evicted it, or a cause the guard cannot see).
 */
export type CacheHygieneCause =
  | "cache_disabled"
  | "below_minimum"
  | "tools_changed"
  | "system_changed"
  | "ttl_mismatch"
  | "messages_changed"
  | "unexplained";

export const CACHE_HYGIENE_CAUSES: readonly CacheHygieneCause[] = Object.freeze([
  "cache_disabled",
  "below_minimum",
  "tools_changed",
  "system_changed",
  "ttl_mismatch",
  "messages_changed",
  "unexplained",
]);

export interface CacheHygieneOptions {
  /** Consecutive cold warm requests before the guard warns; default 2, at least 1. */
  readonly after?: number;
  /** A request this close after the previous one in its session is warm; default one hour (the longest TTL). */
  readonly warmWithinMs?: number;
  /** The model's minimum cacheable prefix in tokens, when the host knows it (it is model dependent). */
  readonly minimumTokens?: (model: string) => number | undefined;
  /** Sessions remembered at once (least recently seen forgotten first); default 10,000. */
  readonly maxSessions?: number;
  /**
   * The host's own sink for warnings, told synchronously with the session's trail pseudonym (a
   * runner host sees no engine events; this is where it hears of one). A throw is swallowed.
   */
  readonly onWarning?: (warning: CacheHygieneNotice) => void;
}

/** What `onWarning` is told: the warning, the session's pseudonym, the model and when. */
export interface CacheHygieneNotice extends CacheHygieneWarning {
  readonly session: string;
  readonly model: string;
  readonly at: number;
}

/** One main step as the guard sees it: the pinned request, its usage, and when it settled. */
export interface CacheObservation {
  /** The session's trail pseudonym (the guard never holds the session id). */
  readonly session: string;
  readonly at: number;
  readonly request: ModelRequest;
  readonly usage: Usage;
}

export interface CacheHygieneWarning {
  readonly cause: CacheHygieneCause;
  /** Consecutive cold warm requests so far, this one included. */
  readonly streak: number;
}

/** The observer a host registers as `EngineConfig.cacheHygiene`; `observe` is synchronous and keeps no content. */
export interface CacheHygieneGuard {
  readonly kind: "cache_hygiene";
  observe(observation: CacheObservation): CacheHygieneWarning | undefined;
}

export class CacheHygieneConfigError extends Error {
  override readonly name = "CacheHygieneConfigError";
}

interface Seen {
  readonly at: number;
  readonly ttlMs: number;
  readonly tools: string;
  readonly system: string;
  /** Hash of each message, in order (only digests are kept). */
  readonly messages: readonly string[];
  readonly streak: number;
  readonly warned: CacheHygieneCause | undefined;
  /** Whether any request of the session read from the cache: then caching works and "nothing cached" has another cause. */
  readonly everRead: boolean;
}

const TTL_MS = { "5m": 300_000, "1h": 3_600_000 } as const;

const digest = (value: unknown): string =>
  createHash("sha256").update(JSON.stringify(value)).digest("base64");

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1)
    throw new CacheHygieneConfigError(`${name} must be a positive integer`);
  return value;
}

/**
 * The cache-hygiene observer (seed 000): warns when a session keeps cold-writing its prefix. A
 * request is cold when less than half its prompt (ordinary input + cache reads + cache writes) was
 * read from the cache (it wrote over half, or nothing cached at all); it counts when it is warm
 * (within `warmWithinMs` of the session's previous request). After `after` such requests in a row it warns once, naming
 * the first cause it can see, and again only when the cause changes; a request that reads through
 * ends the streak.
 */
export function cacheHygieneGuard(options: CacheHygieneOptions = {}): CacheHygieneGuard {
  const after = positiveInteger("after", options.after, 2);
  const warmWithinMs = positiveInteger("warmWithinMs", options.warmWithinMs, TTL_MS["1h"]);
  const maxSessions = positiveInteger("maxSessions", options.maxSessions, 10_000);
  const minimumTokens = options.minimumTokens;
  if (minimumTokens !== undefined && typeof minimumTokens !== "function")
    throw new CacheHygieneConfigError("minimumTokens must be a function");
  const onWarning = options.onWarning;
  if (onWarning !== undefined && typeof onWarning !== "function")
    throw new CacheHygieneConfigError("onWarning must be a function");
  const sessions = new Map<string, Seen>();

  const observe = (o: CacheObservation): CacheHygieneWarning | undefined => {
    const { request, usage } = o;
    const prev = sessions.get(o.session);
    const seen = fingerprint(o, request);
    const reads = usage.cacheReadTokens ?? 0;
    const writes = (usage.cacheWrite5mTokens ?? 0) + (usage.cacheWrite1hTokens ?? 0);
    const prompt = usage.inputTokens + reads + writes;
    const warm = prev !== undefined && o.at - prev.at <= warmWithinMs;
    const cold = prompt > 0 && reads * 2 < prompt;
    let streak = 0;
    let warned: CacheHygieneCause | undefined;
    let warning: CacheHygieneWarning | undefined;
    if (warm && cold) {
      streak = prev.streak + 1;
      warned = prev.warned;
      if (streak >= after) {
        const minimum = minimumTokens?.(request.model);
        const cause = causeOf(prev, seen, o.at, {
          prompt,
          reads,
          writes,
          minimum,
          disabled: !request.cache,
          everRead: prev.everRead,
        });
        if (cause !== prev.warned) warning = Object.freeze({ cause, streak });
        warned = cause;
      }
    }
    sessions.delete(o.session);
    sessions.set(o.session, {
      ...seen,
      streak,
      warned,
      everRead: (prev?.everRead ?? false) || reads > 0,
    });
    if (sessions.size > maxSessions) sessions.delete(sessions.keys().next().value as string);
    if (warning && onWarning) {
      try {
        onWarning(
          Object.freeze({ ...warning, session: o.session, model: request.model, at: o.at }),
        );
      } catch {
        // the host's sink never reaches the turn
      }
    }
    return warning;
  };
  return Object.freeze({ kind: "cache_hygiene" as const, observe });
}

function fingerprint(
  o: CacheObservation,
  request: ModelRequest,
): Omit<Seen, "streak" | "warned" | "everRead"> {
  const ttl = request.cache ? request.cache.ttl : "5m";
  return {
    at: o.at,
    ttlMs: TTL_MS[ttl],
    tools: digest(request.tools),
    system: digest(request.system),
    // What the wire carries of a message: its role and blocks (meta stays in the process).
    messages: request.messages.map((m) => digest([m.role, m.blocks])),
  };
}

interface Counts {
  readonly prompt: number;
  readonly reads: number;
  readonly writes: number;
  readonly minimum: number | undefined;
  readonly disabled: boolean;
  readonly everRead: boolean;
}

/** The first visible cause, most fundamental first: nothing can cache below the minimum. */
function causeOf(
  prev: Seen,
  now: Omit<Seen, "streak" | "warned" | "everRead">,
  at: number,
  c: Counts,
): CacheHygieneCause {
  if (c.minimum !== undefined && c.prompt < c.minimum) return "below_minimum";
  // Nothing cached on a session that never read: the prefix cannot cache (off, or too short).
  const nothing = c.writes === 0 && c.reads === 0 && !c.everRead;
  if (nothing && c.disabled) return "cache_disabled";
  if (nothing) return "below_minimum";
  if (now.tools !== prev.tools) return "tools_changed";
  if (now.system !== prev.system) return "system_changed";
  if (at - prev.at > prev.ttlMs) return "ttl_mismatch";
  const shared =
    prev.messages.length <= now.messages.length &&
    prev.messages.every((m, i) => now.messages[i] === m);
  if (!shared) return "messages_changed";
  return "unexplained";
}
