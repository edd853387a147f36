// The dependency-direction check: a package may import only what DESIGN.md's DAG allows.
// `node scripts/check-deps.mjs [root]` (default: the working directory, the repo) reads every import
// (`import … from`, `export … from`, `import "…"`, `import(…)`, `require(…)`) in src/, test/ and
// bench/ of each workspace under root/packages and root/apps, and fails naming the file and the rule:
// - `dag`: an `@alma-harness/*` import that DESIGN.md's table does not allow (see DAG below);
// - `testing-double`: production source importing a double: a `@alma-harness/<pkg>/testing` subpath
//   may be imported from test/ and bench/, or from a package's own src/testing/, never the rest of src/;
// - `no-io`: src/ of core, loop, conversation or execution importing a Node module that touches the
//   filesystem, spawns a process or thread, or opens a socket (seeds 000 and 001);
// - `no-provider-sdk`: src/ of those packages importing a provider SDK (the neutral message format is
//   the boundary; adapters live in `providers`, over fetch).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { workspaces } from "./workspaces.mjs";

// DESIGN.md's package table as written, one entry a line: what each line lists on the left of its
// arrow. `pkg` allows the package and every subpath of it; `pkg/sub` allows that subpath only (and
// what lies below it), never the package's root: `memory/context` lets loop import
// `@alma-harness/memory/context`, not `@alma-harness/memory`.
// Imports are transitive: a package may import what its line lists and, through each whole package
// listed, what that one may import, with the same subpath restrictions (conversation lists loop, so
// it may import core, execution and memory/context; never the memory root). A subpath entry carries
// nothing further: loop may use memory/context, not what memory itself imports.
const DAG = {
  core: [],
  providers: ["core"],
  execution: ["core"],
  "single-call": ["core", "execution"],
  batch: ["core", "execution"],
  memory: ["core", "execution"],
  loop: ["core", "execution", "memory/context"],
  conversation: ["loop"],
  schedule: ["conversation"],
  "store-sqlite": ["core"],
  "store-postgres": ["core"],
  testing: ["core"],
  // "conversation, stores, providers, … <- runtime": the one-call composition. The "…" is read as
  // the other packages above runtime in the table, which it composes; never testing (suites only).
  runtime: [
    "conversation",
    "store-sqlite",
    "store-postgres",
    "providers",
    "single-call",
    "batch",
    "memory",
    "schedule",
  ],
  // Host-side packages of the table not written yet; their lines hold already.
  mcp: ["core", "loop"],
  otel: ["core"],
  server: ["runtime", "mcp", "otel"],
};
const SCOPE = "@alma-harness/";

// Tests and benches may import the whole of any package their source may import a subpath of, and
// also the shared contract suites (testing) and the doubles of the packages below them (loop/testing).
const TEST_EXTRA = ["testing", "loop"];
// A host-side integration's tests also run it the way a host does: through a runtime composition
// (and what that composition may import).
const TEST_EXTRA_OF = { mcp: ["runtime"] };

// The packages that never touch the filesystem, spawn a process or depend on a provider SDK.
const TRUSTED = new Set(["core", "loop", "conversation", "execution"]);
// Node modules that reach the filesystem, another process or thread, or the network; each also
// under its `node:` name.
const NO_IO = new Set([
  "fs",
  "fs/promises",
  "child_process",
  "cluster",
  "worker_threads",
  "net",
  "tls",
  "dgram",
  "dns",
  "dns/promises",
  "http",
  "https",
  "http2",
]);
// Provider SDKs, by name or by npm scope.
const PROVIDER_SDKS = new Set([
  "openai",
  "ai",
  "@google/generative-ai",
  "@google/genai",
  "@mistralai/mistralai",
  "cohere-ai",
  "groq-sdk",
  "ollama",
  "together-ai",
  "@aws-sdk/client-bedrock-runtime",
  "@azure/openai",
]);
const PROVIDER_SCOPES = ["@anthropic-ai/", "@openrouter/", "@ai-sdk/"];

/** What `pkg` may import: its line's entries, and through each whole package, that one's, transitively. */
function closure(pkg, seen = []) {
  if (seen.includes(pkg)) throw new Error(`check-deps: the DAG has a cycle: ${[...seen, pkg]}`);
  const out = new Set();
  for (const entry of DAG[pkg] ?? []) {
    out.add(entry);
    if (!entry.includes("/")) for (const more of closure(entry, [...seen, pkg])) out.add(more);
  }
  return [...out];
}

/** Whether `spec` (`pkg` or `pkg/sub/…`, the scope left off) is covered by one of `allowed`. */
function permits(allowed, spec) {
  return allowed.some((entry) => spec === entry || spec.startsWith(`${entry}/`));
}

const files = (dir) => {
  let out = [];
  let entries = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out = out.concat(files(path));
    else if (/\.(ts|tsx|mts|cts|js|mjs|cjs)$/.test(name)) out.push(path);
  }
  return out;
};

// Every module specifier of a file: `from "x"` (imports and re-exports), `import "x"`, `import("x")`
// and `require("x")`.
const SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)["']([^"'\n]+)["']/g;
const TESTING_SUBPATH = /^[^/]+\/testing(?:\/|$)/;

/** Why a trusted package may not import `spec`, or undefined. */
function untrusted(spec) {
  const bare = spec.startsWith("node:") ? spec.slice("node:".length) : spec;
  if (NO_IO.has(bare))
    return `no-io: it never touches the filesystem, spawns a process or opens a socket (${spec})`;
  if (PROVIDER_SDKS.has(spec) || PROVIDER_SCOPES.some((scope) => spec.startsWith(scope)))
    return `no-provider-sdk: it never depends on a provider SDK (${spec})`;
  return undefined;
}

/** Every problem of the workspaces under `root`, one line each naming the file and the rule. */
export function checkDependencies(root = process.cwd()) {
  const problems = [];
  for (const w of workspaces(root)) {
    const short = w.name.startsWith(SCOPE) ? w.name.slice(SCOPE.length) : w.name;
    if (!w.name.startsWith(SCOPE) || !Object.hasOwn(DAG, short)) {
      problems.push(
        `${w.name}: not in the DAG (add it to scripts/check-deps.mjs and DESIGN.md's map)`,
      );
      continue;
    }
    const allowed = closure(short);
    // A test may import the whole package its source may import a subpath of.
    const forTests = [
      ...new Set([
        ...allowed.map((e) => e.split("/")[0]),
        ...TEST_EXTRA,
        ...(TEST_EXTRA_OF[short] ?? []).flatMap((p) => [
          p,
          ...closure(p).map((e) => e.split("/")[0]),
        ]),
      ]),
    ];
    for (const [sub, permitted] of [
      ["src", allowed],
      ["test", forTests],
      ["bench", forTests],
    ]) {
      for (const file of files(join(root, w.dir, sub))) {
        const where = relative(root, file).split(sep).join("/");
        const text = readFileSync(file, "utf8");
        for (const match of text.matchAll(SPECIFIER)) {
          const spec = match[1];
          if (sub === "src" && TRUSTED.has(short)) {
            const why = untrusted(spec);
            if (why) problems.push(`${where}: ${w.name} may not import ${spec} [${why}]`);
          }
          if (!spec.startsWith(SCOPE)) continue;
          const target = spec.slice(SCOPE.length);
          const underOwnTesting =
            relative(join(root, w.dir, "src"), file).split(sep)[0] === "testing";
          if (sub === "src" && TESTING_SUBPATH.test(target) && !underOwnTesting) {
            problems.push(
              `${where}: production source may not import ${spec} [testing-double: a double; only test/, bench/ and src/testing/ may]`,
            );
          }
          if (target === short || target.startsWith(`${short}/`)) continue;
          if (!permits(permitted, target))
            problems.push(
              `${where}: ${w.name} may not import ${spec} [dag: DESIGN.md allows ${permitted.join(", ") || "nothing"}]`,
            );
        }
      }
    }
  }
  return problems;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const problems = checkDependencies(process.argv[2] ?? process.cwd());
  if (problems.length > 0) {
    console.error(`dependency direction: ${problems.length} problem(s)\n${problems.join("\n")}`);
    process.exit(1);
  }
  console.log("dependency direction: ok");
}
