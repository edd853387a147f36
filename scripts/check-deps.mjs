// The dependency-direction check: a package may import only what DESIGN.md's DAG allows.
// It reads every import in src/ and test/ of each workspace and fails on an edge not listed here,
// and on production source importing a double: a `@alma-harness/<pkg>/testing` subpath may be
// imported from test/ and bench/, or from a package's own src/testing/, never from the rest of src/.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { workspaces } from "./workspaces.mjs";

const ALLOWED = {
  "@alma-harness/core": [],
  "@alma-harness/providers": ["core"],
  "@alma-harness/execution": ["core"],
  "@alma-harness/memory": ["core", "execution"],
  "@alma-harness/loop": ["core", "execution", "memory"],
  "@alma-harness/conversation": ["core", "execution", "memory", "loop"],
  "@alma-harness/batch": ["core", "execution"],
  "@alma-harness/single-call": ["core", "execution"],
  "@alma-harness/store-sqlite": ["core"],
  "@alma-harness/store-postgres": ["core"],
  "@alma-harness/testing": ["core"],
  "@alma-harness/schedule": ["core", "execution", "loop", "conversation"],
  "@alma-harness/runtime": [
    "core",
    "execution",
    "memory",
    "loop",
    "conversation",
    "store-sqlite",
    "store-postgres",
    "providers",
    "batch",
    "schedule",
    "single-call",
  ],
  "@alma-harness/server": [
    "core",
    "execution",
    "memory",
    "loop",
    "conversation",
    "store-sqlite",
    "store-postgres",
    "providers",
    "runtime",
    "batch",
    "schedule",
    "single-call",
  ],
};
// Tests may also use the shared contract suites and the doubles of the packages below them.
const TEST_EXTRA = ["testing", "loop"];

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
    else if (/\.(ts|tsx|mts|js|mjs)$/.test(name)) out.push(path);
  }
  return out;
};

const IMPORT = /(?:from\s+|import\s*\(\s*|import\s+)["'](@alma-harness\/[a-z-]+)(\/[^"']*)?["']/g;
const TESTING_SUBPATH = /^\/testing(?:\/|$)/;
/** Whether `file` is under the workspace's own `src/testing/`. */
const underTesting = (dir, file) => relative(join(dir, "src"), file).split(sep)[0] === "testing";

const problems = [];
for (const w of workspaces()) {
  const allowed = ALLOWED[w.name];
  if (!allowed) {
    problems.push(
      `${w.name}: not in the DAG (add it to scripts/check-deps.mjs and DESIGN.md's map)`,
    );
    continue;
  }
  for (const [sub, extra] of [
    ["src", []],
    ["test", TEST_EXTRA],
    ["bench", TEST_EXTRA],
  ]) {
    for (const file of files(join(w.dir, sub))) {
      const text = readFileSync(file, "utf8");
      for (const match of text.matchAll(IMPORT)) {
        const target = match[1].slice("@alma-harness/".length);
        if (sub === "src" && TESTING_SUBPATH.test(match[2] ?? "") && !underTesting(w.dir, file)) {
          problems.push(
            `${file}: production source may not import ${match[1]}${match[2]} (a double; only test/, bench/ and src/testing/ may)`,
          );
        }
        if (`@alma-harness/${target}` === w.name) continue;
        if (!allowed.includes(target) && !extra.includes(target))
          problems.push(`${file}: ${w.name} may not import @alma-harness/${target}`);
      }
    }
  }
}
if (problems.length > 0) {
  console.error(`dependency direction: ${problems.length} problem(s)\n${problems.join("\n")}`);
  process.exit(1);
}
console.log("dependency direction: ok");
