// Per-turn cost of a governed turn with the scripted model (DESIGN.md "Performance").
// Run: npm run bench:turn. Prints microseconds per turn and ratios against a floor: the same
// scripted model and tool driven by a bare loop with no governance, no stores, no trails.
import { defineTool, type Msg } from "@alma-harness/core";
import { FakeModelClient, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { benchConfig } from "./config.js";
import { memory } from "@alma-harness/runtime";

const tool = defineTool({
  name: "lookup",
  description: "Looks something up.",
  input: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
  handler: (input) => ({ found: input.q as string }),
});
const extraTools = Array.from({ length: 99 }, (_, i) =>
  defineTool({
    name: `tool_${i}`,
    description: `Extra tool ${i}.`,
    input: { type: "object" },
    handler: () => "ok",
  }),
);

function script(n: number) {
  const out = [];
  for (let i = 0; i < n; i++)
    out.push(
      scriptedToolCall({ id: `c${i}`, name: "lookup", input: { q: "x" } }),
      scriptedText("answer"),
    );
  return out;
}

function runtime(model: FakeModelClient, tools = [tool]) {
  return memory(benchConfig(model, tools));
}

const request = (i: number, session = `s${i}`) => ({
  scope: { org: "bench", uid: "u" },
  sessionId: session,
  idempotencyKey: `k${i}`,
  input: "hello",
  intent: { tier: "balanced" as const, sensitivity: "internal" as const },
});

async function floor(n: number): Promise<number> {
  const model = new FakeModelClient(script(n));
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const messages: Msg[] = [{ role: "user", blocks: [{ type: "text", text: "hello" }] }];
    for (let step = 0; step < 2; step++) {
      const calls: { name: string; arguments: string; id: string }[] = [];
      for await (const e of model.stream(
        { model: "m", system: [], messages, tools: [], maxOutputTokens: 256 },
        new AbortController().signal,
      )) {
        if (e.type === "tool_call") calls.push(e);
      }
      for (const c of calls)
        messages.push({
          role: "user",
          blocks: [
            {
              type: "tool_result",
              callId: c.id,
              name: c.name,
              output: (await tool.handler(JSON.parse(c.arguments), {} as never)) as never,
              isError: false,
            },
          ],
        });
    }
  }
  return Number(process.hrtime.bigint() - start) / 1000 / n;
}

async function governed(
  n: number,
  opts: { history?: number; tools?: boolean } = {},
): Promise<number> {
  const model = new FakeModelClient(script(n + (opts.history ? 0 : 0)));
  const rt = runtime(model, opts.tools ? [tool, ...extraTools] : [tool]);
  if (opts.history) {
    for (let i = 0; i < n; i++) {
      const admission = await rt.stores.admissions.admit({
        scope: request(i).scope,
        sessionId: `s${i}`,
        rootKey: "seed",
        kind: "events",
        admissionId: `seed${i}`,
        now: Date.now(),
        deadlineAt: Date.now() + 60_000,
      });
      if (admission.status !== "admitted") throw new Error("seed");
      const past: Msg[] = Array.from({ length: opts.history }, (_, j) => ({
        role: j % 2 === 0 ? "user" : "assistant",
        blocks: [{ type: "text", text: `message ${j}` }],
      }));
      await rt.stores.sessions.append(request(i).scope, `s${i}`, past, {
        admissionId: `seed${i}`,
        now: Date.now(),
      });
      await rt.stores.admissions.finish(request(i).scope, `seed${i}`);
    }
  }
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const view = await rt.runner.runTurn(request(i));
    if (view.status !== "completed") throw new Error(`turn ${i}: ${view.status}`);
  }
  return Number(process.hrtime.bigint() - start) / 1000 / n;
}

async function concurrent(n: number): Promise<{ ms: number; peakMb: number; startMb: number }> {
  const rt = runtime(new FakeModelClient(script(n)));
  const start = process.memoryUsage().rss;
  let peak = start;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const began = process.hrtime.bigint();
  const views = await Promise.all(
    Array.from({ length: n }, (_, i) => rt.runner.runTurn(request(i))),
  );
  const ms = Number(process.hrtime.bigint() - began) / 1e6;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  if (views.some((v) => v.status !== "completed"))
    throw new Error("a concurrent turn did not complete");
  return { ms, peakMb: peak / 1024 / 1024, startMb: start / 1024 / 1024 };
}

const N = Number(process.env.BENCH_TURNS ?? 2000);
// Warm up on the measured paths first: with 200 turns the JIT was still tiering up during W2,
// which then read slower than W3 and W4 (W2 plus more work).
const WARMUP = Math.min(N, 1000);
await governed(WARMUP);
await floor(WARMUP);
const f = await floor(N);
const w2 = await governed(N);
const w3 = await governed(Math.min(N, 500), { history: 200 });
const w4 = await governed(N, { tools: true });
const w5 = await concurrent(1000);
const row = (name: string, us: number, target: string) =>
  console.log(
    `${name.padEnd(44)} ${us.toFixed(1).padStart(9)} µs  ${(us / f).toFixed(1).padStart(7)}× floor   ${target}`,
  );
console.log(`turns per workload: ${N} (BENCH_TURNS)`);
row("floor: bare loop, same model and tool", f, "");
row("W2 governed turn, tool call then answer", w2, "target ≤ 60 µs");
console.log(
  `${"W3 W2 with 200 prior messages".padEnd(44)} ${w3.toFixed(1).padStart(9)} µs  ${(w3 / w2).toFixed(2).padStart(7)}× W2      target ≤ 1.2× W2`,
);
console.log(
  `${"W4 W2 with 100 registered tools".padEnd(44)} ${w4.toFixed(1).padStart(9)} µs  ${(w4 / w2).toFixed(2).padStart(7)}× W2      target ≤ 1.2× W2`,
);
// Peak RSS is the whole process's: it includes the loader (tsx: about 100 MB at start) and the
// high-water mark the earlier workloads left, so the growth during W5 is printed beside it.
console.log(
  `${"W5 1,000 concurrent W2 sessions".padEnd(44)} ${w5.ms.toFixed(1).padStart(9)} ms  peak RSS ${w5.peakMb.toFixed(0)} MB (+${(w5.peakMb - w5.startMb).toFixed(0)} MB during W5)   target ≤ 150 ms, ≤ 110 MB`,
);
