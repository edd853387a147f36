import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { conversationRootKey } from "@alma-harness/conversation";
import {
  type Block,
  type JsonObject,
  type Msg,
  type Scope,
  SEARCH_TOOLS_NAME,
  type ToolDefinition,
} from "@alma-harness/core";
import type { PermissionController } from "@alma-harness/loop";
import {
  FakeModelClient,
  type ScriptedResponse,
  scriptedText,
  scriptedToolCall,
} from "@alma-harness/loop/testing";
import { memory } from "@alma-harness/runtime";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const MODULES = `${ROOT}node_modules/@modelcontextprotocol/`;

/** The real servers the tests start (none written here). */
export const EVERYTHING = `${MODULES}server-everything/dist/index.js`;
export const MEMORY = `${MODULES}server-memory/dist/index.js`;
export const FILESYSTEM = `${MODULES}server-filesystem/dist/index.js`;
/** A server of the official SDK that answers with hostile lists and outputs. */
export const HOSTILE = fileURLToPath(new URL("./fixtures/hostile-server.mjs", import.meta.url));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface HttpServer {
  readonly url: string;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/** server-everything over Streamable HTTP on a free port, ready once it says it listens. */
export async function startEverythingHttp(): Promise<HttpServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING, "streamableHttp"], {
    env: { PATH: process.env.PATH ?? "", PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`no listen line: ${seen}`)), 15_000);
    const on = (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes("listening on port")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stderr?.on("data", on);
    child.stdout?.on("data", () => {});
    child.once("exit", () => reject(new Error(`server-everything exited: ${seen}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** Which tenant each running turn belongs to, as a host records it before it starts the turn. */
export class Tenants {
  readonly #orgs = new Map<string, string>();
  readonly tenantOf = (turnId: string): string | undefined => this.#orgs.get(turnId);
  register(scope: Scope, sessionId: string, key: string): string {
    const rootKey = conversationRootKey(scope, sessionId, key);
    this.#orgs.set(rootKey, scope.org);
    return rootKey;
  }
}

export const PRICES = { version: "p1", models: { demo: { rates: { input: 3, output: 15 } } } };

/** A memory runtime over the MCP tools, with a scripted model. */
export function runtimeWith(
  tools: readonly ToolDefinition[],
  script: readonly ScriptedResponse[],
  permissions?: PermissionController,
) {
  const model = new FakeModelClient(script);
  const rt = memory({
    clients: [model],
    policy: {
      resolve: () => ({ clientId: "fake", model: "demo", maxOutputTokens: 512, cache: false }),
    },
    prompt: "You are a test agent.",
    tools: [...tools],
    ...(permissions ? { permissions } : {}),
    asks: "park",
    prices: PRICES,
    policyVersion: "policy-1",
    priceVersion: "p1",
    configRevision: "rev-1",
    resultRetentionMs: 86_400_000,
    runTimeoutMs: 120_000,
    maxCalls: 6,
    maxInputChars: 20_000,
  });
  return { rt, model };
}

/** Every tool result block of a session, in order. */
export async function toolResults(
  rt: ReturnType<typeof memory>,
  scope: Scope,
  sessionId: string,
): Promise<Extract<Block, { type: "tool_result" }>[]> {
  const view = await rt.stores.sessions.load(scope, sessionId);
  return view.messages
    .flatMap((m: Msg) => m.blocks)
    .filter((b): b is Extract<Block, { type: "tool_result" }> => b.type === "tool_result");
}

export const intent = { tier: "balanced", sensitivity: "internal" } as const;

type Rt = ReturnType<typeof memory>;

/** Runs a turn for `scope`, its tenant registered first (as the host does before any tool runs). */
export function runAs(rt: Rt, tenants: Tenants, scope: Scope, sessionId: string, key: string) {
  tenants.register(scope, sessionId, key);
  return rt.runner.runTurn({ scope, sessionId, idempotencyKey: key, input: "go", intent });
}

/** The model's script: load a deferred tool with search_tools, call it, then answer. */
export function loadAndCall(query: string, tool: string, input: Record<string, unknown>) {
  return [
    scriptedToolCall({ id: "s1", name: SEARCH_TOOLS_NAME, input: { query } }),
    scriptedToolCall({ id: "c1", name: tool, input: input as JsonObject }),
    scriptedText("done"),
  ];
}

/** The output of the session's result for `tool`. */
export async function resultOf(rt: Rt, scope: Scope, sessionId: string, tool: string) {
  return (await toolResults(rt, scope, sessionId)).find((r) => r.name === tool);
}
