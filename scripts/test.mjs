// `npm test`: every package's tests with vitest, then one plain closing line that any CI reads:
// "tests: N passed, N failed, N skipped". Extra arguments go to vitest (e.g. a package path).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { consoleStale } from "../apps/server/scripts/console-stale.mjs";

// The operator console's bundle, once, before any test: the browser test and `npm start` (which
// tests spawn) would each build it when missing or stale, and two builds at once write the same
// folder.
if (consoleStale("apps/server")) {
  const built = spawnSync(process.execPath, ["apps/server/scripts/build-console.mjs"], {
    stdio: "inherit",
  });
  if (built.status !== 0) process.exit(built.status ?? 1);
}

const dir = mkdtempSync(join(tmpdir(), "alma-test-"));
const report = join(dir, "report.json");
const run = spawnSync(
  process.execPath,
  [
    "node_modules/vitest/vitest.mjs",
    "run",
    "--reporter=default",
    "--reporter=json",
    `--outputFile.json=${report}`,
    ...process.argv.slice(2),
  ],
  { stdio: "inherit" },
);
let summary = "tests: 0 passed, 1 failed (no report was written)";
try {
  const r = JSON.parse(readFileSync(report, "utf8"));
  const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  // Vitest fails a run with unhandled errors even when every test passed: count that as a failure.
  const failed = r.numFailedTests + (run.status !== 0 && r.numFailedTests === 0 ? 1 : 0);
  summary = `tests: ${r.numPassedTests} passed, ${failed} failed, ${skipped} skipped`;
} catch {
  // the summary above stands: vitest did not finish its report
}
rmSync(dir, { recursive: true, force: true });
console.log(summary);
process.exit(run.status ?? 1);
