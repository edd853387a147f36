import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";
import { HttpError } from "./errors.js";

/** Seconds a client is asked to wait after a `503 over_capacity`: connections turn over quickly. */
export const OVER_CAPACITY_RETRY_AFTER_S = 1;

/** How long an over-cap connection has to send a whole request (or the headers timeout, if shorter). */
export const OVER_CAPACITY_FUSE_MS = 2_000;

/** What the Node adapter tells the HTTP core about the connection a request came on. */
export interface ConnectionInfo {
  /** It was opened while the host held its cap of connections: only its answer is owed. */
  readonly overCapacity: boolean;
  /** It came to the health listener (`Host.listenHealth`): only `/healthz` is served there. */
  readonly healthOnly?: boolean;
}

/** What an over-cap connection that never sent a whole request gets before it is closed. */
const SLOW_OVER_CAPACITY = Buffer.from(
  "HTTP/1.1 503 Service Unavailable\r\n" +
    `Retry-After: ${OVER_CAPACITY_RETRY_AFTER_S}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
);

/**
 * The connection cap, counted by the host. Node's own `server.maxConnections` closes a connection
 * over it unanswered, which a client reads as a reset; here a connection over the cap is kept and
 * read by Node's parser like any other, `isOver` says so, and the core answers its request (`503
 * over_capacity` with `Retry-After`; `/healthz` is served) with `Connection: close`. It never
 * counts against the cap. One that has not sent a whole request within `fuseMs` is answered a bare
 * 503 and closed, as a slow client is; the check waits for the event loop's next poll first, so a
 * request that arrived while the loop was busy still counts.
 */
export class ConnectionCap {
  #open = 0;
  readonly #over = new WeakSet<Socket>();
  readonly #asked = new WeakSet<Socket>();

  constructor(
    readonly max: number,
    readonly fuseMs: number,
  ) {}

  /** Counts the connections `server` accepts from now on, and notes which sent a request. */
  watch(server: Server): void {
    server.on("connection", (socket: Socket) => this.#accept(socket));
    server.on("request", (req: IncomingMessage) => this.#asked.add(req.socket));
  }

  /** Whether this connection was opened over the cap. */
  isOver(socket: Socket): boolean {
    return this.#over.has(socket);
  }

  #accept(socket: Socket): void {
    if (this.#open < this.max) {
      this.#open += 1;
      socket.once("close", () => {
        this.#open -= 1;
      });
      return;
    }
    this.#over.add(socket);
    const fuse = setTimeout(() => setImmediate(() => this.#cutIfSilent(socket)), this.fuseMs);
    fuse.unref();
    socket.once("close", () => clearTimeout(fuse));
  }

  #cutIfSilent(socket: Socket): void {
    if (socket.destroyed || this.#asked.has(socket)) return;
    socket.end(SLOW_OVER_CAPACITY);
    socket.destroySoon();
  }
}

/** The answer to any request but `/healthz` on an over-cap connection. */
export function overCapacity(): HttpError {
  return new HttpError(
    "over_capacity",
    "the host holds as many connections as it serves at once; retry the same request shortly",
    { retryable: true, headers: { "retry-after": String(OVER_CAPACITY_RETRY_AFTER_S) } },
  );
}
