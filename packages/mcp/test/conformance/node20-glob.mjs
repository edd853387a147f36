// The conformance CLI (0.1.16) imports `globSync` from "fs", which Node 22 added; Node 20 fails to
// link the module at all, though no client scenario calls it. This resolve hook gives the CLI's own
// imports of "fs" a module with every export of node:fs plus a `globSync` that throws when called.
// Node's documented customization hooks: nothing of the CLI is edited. On Node 22 it changes nothing.
import { register } from "node:module";

const shim = `import * as fs from "node:fs"; export * from "node:fs"; export default fs;
export const globSync = fs.globSync ?? (() => { throw new Error("globSync needs Node 22"); });`;
const hook = `export async function resolve(specifier, context, next) {
  if (specifier === "fs" && context.parentURL?.includes("/@modelcontextprotocol/conformance/"))
    return { url: ${JSON.stringify(`data:text/javascript,${encodeURIComponent(shim)}`)}, shortCircuit: true };
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);
