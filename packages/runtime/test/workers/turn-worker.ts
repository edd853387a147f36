// A host process for the multi-process test: runs the turns it is given on one PostgreSQL database
// with a scripted model, and prints one JSON line per event on stdout.
//   argv[2]: JSON {schema, rootSchema, jobs: [{sessionId, key}], hang?: true | "call1" | "tool" | "call2"}
//   hang: stop (until killed) inside the first model call (true or "call1"), inside the tool handler
//   (the first call's journal record completed) or inside the second model call.
import {
  defineTool,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
} from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { postgres } from "@alma-harness/runtime";
import { DEPLOYMENT } from "./deployment.js";

const spec = JSON.parse(process.argv[2] ?? "{}") as {
  schema: string;
  rootSchema: string;
  jobs: { sessionId: string; key: string }[];
  hang?: true | "call1" | "tool" | "call2";
};
const hangAt = spec.hang === true ? "call1" : spec.hang;
const forever = () => new Promise<never>(() => undefined);
const out = (line: object) =>
  process.stdout.write(`${JSON.stringify({ pid: process.pid, ...line })}\n`);

/** Tool call first, then an answer, decided by the request so concurrent turns cannot mix scripts. */
class ScriptedByRequest implements ModelClient {
  readonly id = "fake";
  readonly provider = "fake";
  validate(): void {}
  async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    const last = request.messages.at(-1);
    const key = request.messages
      .map((m) => m.blocks.map((b) => (b.type === "text" ? b.text : "")).join(""))
      .find((t) => t.startsWith("job "));
    out({ type: "dispatch", key });
    const afterTool = last?.blocks.some((b) => b.type === "tool_result");
    if ((hangAt === "call1" && !afterTool) || (hangAt === "call2" && afterTool)) {
      out({ type: "hanging", key });
      await new Promise((_, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
      );
    }
    const script = afterTool
      ? scriptedText(`answer to ${key}`)
      : scriptedToolCall({
          id: `call-${(key ?? "").replace(/\W/g, "_")}-${process.pid}`,
          name: "note",
          input: { text: key ?? "" },
        });
    for (const event of script.events) yield event;
  }
}

const note = defineTool({
  name: "note",
  description: "Takes a note.",
  input: { type: "object", properties: { text: { type: "string" } } },
  handler: async (i) => {
    if (hangAt === "tool") {
      out({ type: "hanging" });
      await forever();
    }
    return { noted: i.text as string };
  },
});

const rt = await postgres({
  clients: [new ScriptedByRequest()],
  policy: {
    resolve: () => ({ clientId: "fake", model: "demo", maxOutputTokens: 256, cache: false }),
  },
  prompt: "worker",
  // Every worker process shares one key, as every host process on one database must.
  trailKey: "worker-trail-key-shared-by-every-process",
  tools: [note],
  ...DEPLOYMENT,
  store: {
    connectionString: process.env.ALMA_TEST_DATABASE_URL,
    schema: spec.schema,
    rootSchema: spec.rootSchema,
  },
});
out({ type: "ready" });
await Promise.all(
  spec.jobs.map(async (job) => {
    const view = await rt.runner.runTurn({
      scope: { org: "mp", uid: "u" },
      sessionId: job.sessionId,
      idempotencyKey: job.key,
      input: `job ${job.key}`,
      intent: { tier: "balanced", sensitivity: "internal" },
    });
    out({
      type: "view",
      key: job.key,
      sessionId: job.sessionId,
      status: view.status,
      replayed: view.status === "completed" ? view.replayed : undefined,
    });
  }),
);
await rt.close();
out({ type: "done" });
