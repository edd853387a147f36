// The MCP client under conformance test: the runner appends the URL of its scenario's server and
// sets MCP_CONFORMANCE_SCENARIO. It connects through @alma-harness/mcp (openMcp), and calls the
// scenario's tool inside a governed turn of a memory runtime, as a host would.
import { openMcp, parseMcpConfig } from "@alma-harness/mcp";
import { runAs, runtimeWith, Tenants, loadAndCall } from "../helpers.js";

const TOOLS: Record<string, { tool: string; input: Record<string, unknown> }> = {
  tools_call: { tool: "add_numbers", input: { a: 2, b: 3 } },
  "sse-retry": { tool: "test_reconnection", input: {} },
};

const url = process.argv[process.argv.length - 1] as string;
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
const tenants = new Tenants();
const hub = await openMcp(
  parseMcpConfig({
    servers: [
      {
        name: "conf",
        transport: { type: "http", url },
        callTimeoutMs: 10_000,
        tenants: { tenant: { allow: ["*"] } },
      },
    ],
  }),
  { tenantOf: tenants.tenantOf, clientInfo: { name: "alma-conformance", version: "0.1.0" } },
);
const call = TOOLS[scenario];
let status = "opened";
if (call) {
  const { rt } = runtimeWith(
    hub.tools,
    loadAndCall(call.tool, `conf__${call.tool}`, call.input),
    hub.permissions(),
  );
  status = (await runAs(rt, tenants, { org: "tenant", uid: "u" }, "s", "k")).status;
}
console.log(
  JSON.stringify({ scenario, status, tools: hub.tools.map((t) => t.name), problems: hub.problems }),
);
await hub.close();
