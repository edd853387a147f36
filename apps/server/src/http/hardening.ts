import { createServer, type RequestListener, type Server } from "node:http";
import { ConnectionCap, OVER_CAPACITY_FUSE_MS } from "./connections.js";

/**
 * How the host's sockets are bounded. Node's own defaults let a client that sends its headers and
 * then dribbles the body hold a socket for five minutes and open as many as it likes; these close
 * it within `requestTimeoutMs` (checked every `checkEveryMs`) and cap the open connections (a
 * connection over the cap is answered 503 and closed, never dropped: `connections.ts`).
 */
export interface ServerLimits {
  /** The request line and headers must arrive within this (default 10 s). */
  readonly headersTimeoutMs: number;
  /** The whole request, headers and body, must arrive within this (default 30 s); the response may take longer. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this (default 5 s). */
  readonly keepAliveTimeoutMs: number;
  /** Open connections served at most; one more gets `503 over_capacity` and is closed (default 256). */
  readonly maxConnections: number;
  /** How often Node checks the two request timeouts (default 1 s): a timeout is enforced within this much more. */
  readonly checkEveryMs: number;
  /**
   * Connections the kernel queues before the host accepts them (`listen`'s backlog; default 4,096,
   * which Linux caps at `net.core.somaxconn`). Node's own 511 overflowed under a burst of 1,000
   * connections: a dropped SYN waits 1 s and more for its retry, so a health check on a fresh
   * connection took 5 s (`npm run bench:load`). The kernel's queue is the host's queue: over the
   * connection cap a connection is answered 503, never held.
   */
  readonly listenBacklog: number;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 256,
  checkEveryMs: 1_000,
  listenBacklog: 4_096,
});

/** Throws a `RangeError` naming the setting when the limits do not make sense together. */
export function checkServerLimits(limits: ServerLimits): ServerLimits {
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1)
      throw new RangeError(`${name} must be a positive integer`);
  }
  if (limits.headersTimeoutMs > limits.requestTimeoutMs)
    throw new RangeError("headersTimeoutMs must not exceed requestTimeoutMs");
  return limits;
}

/** The cap of `limits` for one server; its listener asks it which connections came in over the cap. */
export function connectionCap(limits: ServerLimits): ConnectionCap {
  return new ConnectionCap(
    limits.maxConnections,
    Math.min(OVER_CAPACITY_FUSE_MS, limits.headersTimeoutMs),
  );
}

/**
 * A `node:http` server with the limits applied; `cap` counts its connections. Node's own
 * `maxConnections` stays unset: it would close a connection over the cap unanswered.
 */
export function boundedServer(
  listener: RequestListener,
  limits: ServerLimits,
  cap: ConnectionCap,
): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: limits.checkEveryMs,
      requireHostHeader: true,
    },
    listener,
  );
  cap.watch(server);
  return server;
}

/**
 * The Host names a request may carry (DNS rebinding: a page on another name must not reach a host on
 * loopback). `any` accepts every name. The default when none is configured: bound to loopback, the
 * localhost names; bound to one address, that address; bound to every address, any name.
 */
export type AllowedHosts = "any" | ReadonlySet<string>;

const LOOPBACK = ["127.0.0.1", "localhost", "::1"];

export function defaultAllowedHosts(bindAddress: string): AllowedHosts {
  const bare = bindAddress.replace(/^\[|\]$/g, "").toLowerCase();
  if (bare === "0.0.0.0" || bare === "::" || bare === "") return "any";
  if (LOOPBACK.includes(bare) || bare.startsWith("127.")) return new Set([...LOOPBACK, bare]);
  return new Set([bare]);
}

/** `ALMA_ALLOWED_HOSTS`-style text: `*` for any, else names separated by commas. */
export function parseAllowedHosts(text: string): AllowedHosts {
  const names = text
    .split(",")
    .map((n) => n.trim().toLowerCase())
    .filter((n) => n.length > 0);
  if (names.includes("*")) return "any";
  return new Set(names.map((n) => n.replace(/^\[|\]$/g, "")));
}

/** Whether a URL's hostname (`[::1]` keeps its brackets there) is allowed. */
export function hostAllowed(allowed: AllowedHosts, hostname: string): boolean {
  if (allowed === "any") return true;
  return allowed.has(hostname.replace(/^\[|\]$/g, "").toLowerCase());
}

/**
 * The standard response headers of every answer: no MIME sniffing, no referrer, no framing (the
 * console's own CSP says `frame-ancestors 'none'` too), and an API answer is never cached unless its
 * route said otherwise (the console's page and assets do).
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
});

/** A CSP for answers that are not the console's page: nothing may load, nothing may frame it. */
const API_CSP = "default-src 'none'; frame-ancestors 'none'";

export function withSecurityHeaders(response: Response): Response {
  const add = (headers: Headers) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) headers.set(name, value);
    if (!headers.has("cache-control")) headers.set("cache-control", "no-store");
    if (!headers.has("content-security-policy")) headers.set("content-security-policy", API_CSP);
  };
  try {
    add(response.headers);
    return response;
  } catch {
    // Immutable headers (a Response the host did not build): copy them onto a new one.
    const headers = new Headers(response.headers);
    add(headers);
    return new Response(response.body, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  }
}
