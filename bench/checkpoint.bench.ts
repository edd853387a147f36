// What a durable turn writes at its step boundaries (issue 25): the bytes each checkpoint stores
// with messages by reference (continuation version 2: the record plus only the new messages),
// against what the same boundaries stored when every record carried the whole turn inline
// (version 1), measured in the same run on the same turns. Run: npm run bench:checkpoint.
import { defineTool, type JsonValue } from "@alma-harness/core";
import { FakeModelClient, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { memory } from "@alma-harness/runtime";
import { benchConfig } from "./config.js";

// A tool answer of about 2 KB: what a booking or records lookup returns.
const lookup = defineTool({
  name: "lookup",
  description: "Looks a record up.",
  input: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
  handler: (input) => ({ q: input.q as string, rows: "r".repeat(2_000) }),
});

function script(steps: number) {
  return [
    ...Array.from({ length: steps }, (_, i) =>
      scriptedToolCall(
        { id: `c${i}`, name: "lookup", input: { q: `q${i}` } },
        { text: "Checking." },
      ),
    ),
    scriptedText("Here is what I found."),
  ];
}

interface Written {
  readonly continuation: JsonValue;
  readonly outputs?: readonly { readonly digest: string; readonly message: JsonValue }[];
}

type Loop = { messages: { ref: string; digest?: string }[] } & Record<string, JsonValue>;

/** One turn of `steps` tool steps: bytes stored by version 2, and by version 1 at the same boundaries. */
async function measure(steps: number) {
  const rt = memory({
    ...benchConfig(new FakeModelClient(script(steps)), [lookup], steps + 2),
    asks: "park",
  });
  const parked = rt.stores.parked;
  const write = parked.checkpoint.bind(parked);
  const held = new Map<string, JsonValue>();
  const bytes = { v2: 0, v1: 0, checkpoints: 0 };
  parked.checkpoint = async (input) => {
    const w = input as Written;
    for (const o of w.outputs ?? []) held.set(o.digest, o.message);
    bytes.checkpoints += 1;
    bytes.v2 += JSON.stringify(w.continuation).length + JSON.stringify(w.outputs ?? []).length;
    // The same boundary as version 1 stored it: every message inline in the record.
    const record = w.continuation as { loop: Loop };
    const inline = record.loop.messages.map((m) => ({
      ref: "inline",
      message: held.get(m.digest ?? ""),
    }));
    bytes.v1 += JSON.stringify({ ...record, loop: { ...record.loop, messages: inline } }).length;
    return write(input);
  };
  const view = await rt.runner.runTurn({
    scope: { org: "bench", uid: "u" },
    sessionId: `s${steps}`,
    idempotencyKey: `k${steps}`,
    input: "Find my records.",
    intent: { tier: "balanced", sensitivity: "internal" },
  });
  if (view.status !== "completed") throw new Error(`turn of ${steps} steps: ${view.status}`);
  return bytes;
}

console.log(
  "| tool steps | checkpoints | bytes stored, v1 (inline) | bytes stored, v2 (by reference) | v2 ÷ v1 |",
);
console.log("|---:|---:|---:|---:|---:|");
for (const steps of [1, 4, 16, 32]) {
  const b = await measure(steps);
  console.log(
    `| ${steps} | ${b.checkpoints} | ${b.v1.toLocaleString("en")} | ${b.v2.toLocaleString("en")} | ${(b.v2 / b.v1).toFixed(2)} |`,
  );
}
