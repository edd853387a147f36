import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { McpServerConfig, McpTenantBinding } from "./config.js";
import { type Listing, listTools } from "./snapshot.js";

/** One tenant's live MCP session with one server: its own process or HTTP session, its listing. */
export interface McpSession {
  readonly client: Client;
  readonly listing: Listing;
  /** Set when the transport closed (the process exited, the session ended): the next call reconnects. */
  closed: boolean;
}

export type SessionResult =
  | { readonly ok: true; readonly session: McpSession }
  | { readonly ok: false; readonly kind: "unavailable" | "bad_list"; readonly detail: string };

export interface ClientInfo {
  readonly name: string;
  readonly version: string;
}

/** The transport of one tenant's session: the server's settings with the tenant's own over them. */
function transportFor(server: McpServerConfig, binding: McpTenantBinding): Transport {
  const t = server.transport;
  if (t.type === "stdio") {
    const cwd = binding.cwd ?? t.cwd;
    return new StdioClientTransport({
      command: t.command,
      args: [...(binding.args ?? t.args)],
      // The SDK adds only a minimal default environment (PATH, HOME…): the host's secrets stay home.
      env: { ...t.env, ...binding.env },
      ...(cwd === undefined ? {} : { cwd }),
      stderr: "ignore",
    });
  }
  return new StreamableHTTPClientTransport(new URL(t.url), {
    requestInit: { headers: { ...t.headers, ...binding.headers } },
  });
}

function reason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, " ").slice(0, 200);
}

/**
 * The sessions of every (server, tenant) pair, opened on first use and reopened after one closes.
 * A session is never shared between tenants: each has its own transport, credentials and listing.
 */
export class McpSessions {
  readonly #open = new Map<string, Promise<SessionResult>>();
  #closed = false;

  constructor(private readonly info: ClientInfo) {}

  /** The tenant's session with the server, connecting (and listing its tools) when there is none. */
  session(server: McpServerConfig, org: string): Promise<SessionResult> {
    const key = `${server.name}\u0000${org}`;
    const held = this.#open.get(key);
    if (held) return held;
    const binding = server.tenants[org];
    if (this.#closed || binding === undefined)
      return Promise.resolve({
        ok: false,
        kind: "unavailable",
        detail: "no session for this tenant",
      });
    const opening = this.#connect(server, org, binding);
    this.#open.set(key, opening);
    // A failed connection is not kept: the next call tries again.
    opening.then((r) => {
      if (!r.ok && this.#open.get(key) === opening) this.#open.delete(key);
    });
    return opening;
  }

  /** Forgets a session whose outcome is in doubt and closes it: the next call starts a new one. */
  drop(server: McpServerConfig, org: string, session: McpSession): void {
    const key = `${server.name}\u0000${org}`;
    session.closed = true;
    this.#open.delete(key);
    void session.client.close().catch(() => {});
  }

  async #connect(
    server: McpServerConfig,
    org: string,
    binding: McpTenantBinding,
  ): Promise<SessionResult> {
    const client = new Client({ name: this.info.name, version: this.info.version });
    try {
      await client.connect(transportFor(server, binding), { timeout: server.connectTimeoutMs });
    } catch (error) {
      await client.close().catch(() => {});
      return { ok: false, kind: "unavailable", detail: reason(error) };
    }
    let listing: Listing;
    try {
      listing = await listTools(client, server.name, org, server.connectTimeoutMs);
    } catch (error) {
      // A closed transport is a server that went away; anything else is an answer we cannot read.
      const kind = client.transport === undefined ? "unavailable" : "bad_list";
      await client.close().catch(() => {});
      return { ok: false, kind, detail: reason(error) };
    }
    if (this.#closed) {
      await closeClient(client);
      return { ok: false, kind: "unavailable", detail: "closed" };
    }
    const session: McpSession = { client, listing, closed: false };
    this.#watch(`${server.name}\u0000${org}`, session);
    return { ok: true, session };
  }

  /** A transport that closes by itself (the process exited) frees its slot for a new session. */
  #watch(key: string, session: McpSession): void {
    session.client.onclose = () => {
      session.closed = true;
      const held = this.#open.get(key);
      void held?.then((r) => {
        if (r.ok && r.session === session && this.#open.get(key) === held) this.#open.delete(key);
      });
    };
  }

  /** Closes every session (stdio processes end, HTTP sessions are terminated). */
  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#open.values()];
    this.#open.clear();
    await Promise.all(
      all.map(async (p) => {
        const r = await p;
        if (r.ok) {
          r.session.closed = true;
          await closeClient(r.session.client);
        }
      }),
    );
  }
}

/** An HTTP session is ended on the server too (DELETE), then the transport closes. */
async function closeClient(client: Client): Promise<void> {
  const transport = client.transport;
  if (transport instanceof StreamableHTTPClientTransport)
    await transport.terminateSession().catch(() => {});
  await client.close().catch(() => {});
}
