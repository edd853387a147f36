// Per-call cost of a governed single call (`rt.steps.run`) with the scripted model, on memory and
// SQLite (grouped commits), beside a governed text turn on the same composition.
// Run: node --conditions=alma-source --import tsx bench/single-call.bench.ts [n]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeModelClient, scriptedText } from "@alma-harness/loop/testing";
import { memory, type Runtime, sqlite } from "@alma-harness/runtime";
import { benchConfig } from "./config.js";

const N = Number(process.argv[2] ?? 2000);
const ANSWER = '{"category":"booking","urgency":2}';
const schema = {
  type: "object",
  properties: { category: { type: "string" }, urgency: { type: "integer" } },
  required: ["category", "urgency"],
};
const scope = { org: "bench", uid: "u" };
const intent = { tier: "fast" as const, sensitivity: "internal" as const };

async function perCall(
  open: (model: FakeModelClient) => Runtime,
  kind: "step" | "turn",
  n: number,
): Promise<number> {
  const model = new FakeModelClient(Array.from({ length: n + 50 }, () => scriptedText(ANSWER)));
  const rt = open(model);
  const run = (i: number) =>
    kind === "step"
      ? rt.steps.run({
          scope,
          idempotencyKey: `k${i}`,
          intent,
          prompt: "Classify: book me for Friday.",
          output: { name: "triage", schema },
        })
      : rt.runner.runTurn({
          scope,
          sessionId: `s${i}`,
          idempotencyKey: `k${i}`,
          input: "Classify: book me for Friday.",
          intent,
        });
  for (let i = 0; i < 50; i++) await run(-1 - i);
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const r = await run(i);
    if (r.status !== "completed") throw new Error(`call ${i}: ${r.status}`);
  }
  const us = Number(process.hrtime.bigint() - start) / 1000 / n;
  await rt.close();
  return us;
}

const dir = mkdtempSync(join(tmpdir(), "alma-bench-single-"));
let files = 0;
const onSqlite = (model: FakeModelClient) =>
  sqlite({ ...benchConfig(model, []), store: { path: join(dir, `b${++files}.db`) } });
const onMemory = (model: FakeModelClient) => memory(benchConfig(model, []));
try {
  const rows = [
    ["memory", "single call", await perCall(onMemory, "step", N)],
    ["memory", "text turn", await perCall(onMemory, "turn", N)],
    ["sqlite", "single call", await perCall(onSqlite, "step", Math.min(N, 500))],
    ["sqlite", "text turn", await perCall(onSqlite, "turn", Math.min(N, 500))],
  ] as const;
  for (const [store, what, us] of rows)
    console.log(`${store.padEnd(7)} ${what.padEnd(12)} ${us.toFixed(1).padStart(8)} µs/call`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
