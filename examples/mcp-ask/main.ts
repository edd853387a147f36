// An MCP server's tools behind an ask: server-filesystem's write_file is annotated destructive, so
// the clinic's "allow everything" rule is tightened to an ask; the turn parks, an operator approves,
// and only then is the file written. `npm run example:mcp-ask` (offline: a scripted model).
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { conversationRootKey } from "@alma-harness/conversation";
import { SEARCH_TOOLS_NAME } from "@alma-harness/core";
import { FakeModelClient, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { openMcp, parseMcpConfig } from "@alma-harness/mcp";
import { memory } from "@alma-harness/runtime";

const server = createRequire(import.meta.url).resolve(
  "@modelcontextprotocol/server-filesystem/dist/index.js",
);
const folder = realpathSync(mkdtempSync(join(tmpdir(), "alma-example-mcp-")));
const scope = { org: "sunrise-clinic", uid: "p-1001" };
const owners = new Map<string, string>(); // turn id → tenant, as a host records it

const hub = await openMcp(
  parseMcpConfig({
    servers: [
      {
        name: "files",
        transport: { type: "stdio", command: process.execPath, args: [server, folder] },
        tenants: { "sunrise-clinic": { allow: ["*"] } },
      },
    ],
  }),
  { tenantOf: (turnId) => owners.get(turnId) },
);
const note = join(folder, "booking.txt");
const model = new FakeModelClient([
  scriptedToolCall({ id: "s1", name: SEARCH_TOOLS_NAME, input: { query: "write a file" } }),
  scriptedToolCall({
    id: "c1",
    name: "files__write_file",
    input: { path: note, content: "Ana, Monday 09:00" },
  }),
  scriptedText("Your booking note is saved."),
]);
const { runner } = memory({
  clients: [model],
  policy: {
    resolve: () => ({ clientId: "fake", model: "demo", maxOutputTokens: 512, cache: false }),
  },
  prompt: "You are the front desk of a clinic.",
  tools: [...hub.tools],
  permissions: hub.permissions(),
  asks: "park",
  prices: { version: "p1", models: { demo: { rates: { input: 3, output: 15 } } } },
  policyVersion: "policy-1",
  priceVersion: "p1",
  configRevision: `rev-1.${hub.revision}`,
  resultRetentionMs: 86_400_000,
  runTimeoutMs: 120_000,
  maxCalls: 6,
  maxInputChars: 20_000,
});

try {
  owners.set(conversationRootKey(scope, "chat-1", "msg-1"), scope.org);
  const parked = await runner.runTurn({
    scope,
    sessionId: "chat-1",
    idempotencyKey: "msg-1",
    input: "Please note my booking",
    intent: { tier: "balanced", sensitivity: "internal" },
  });
  if (parked.status !== "awaiting_approval")
    throw new Error(`expected a park, got ${parked.status}`);
  const ask = parked.asks[0];
  console.log(`parked: ${ask?.tool} waits for the operator (ask ${ask?.askId})`);
  console.log(`written before approval: ${safeRead(note) ?? "nothing"}`);
  const { view } = await runner.resolveAsk({
    scope,
    askId: ask?.askId ?? "",
    decision: "approve",
    by: "operator",
  });
  if (view.status !== "completed") throw new Error(`expected completed, got ${view.status}`);
  const reply = view.result.reply.map((b) => (b.type === "text" ? b.text : "")).join("");
  console.log(`approved: ${reply}`);
  console.log(`written after approval: ${safeRead(note)}`);
} finally {
  await hub.close();
  rmSync(folder, { recursive: true, force: true });
}

function safeRead(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}
