// A host process for the routines multi-process test: one scheduler tick on one PostgreSQL database
// at a shared instant, with a scripted model; prints one JSON line (what it ran) on stdout.
//   argv[2]: JSON {schema, rootSchema, owner, now, startAt}
import type { OutputSink, RoutineOutput } from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import { repeatingTextModel } from "@alma-harness/loop/testing";
import { postgres, routineScheduler } from "@alma-harness/runtime";
import { DEPLOYMENT } from "./deployment.js";

const spec = JSON.parse(process.argv[2] ?? "{}") as {
  schema: string;
  rootSchema: string;
  owner: string;
  now: number;
  startAt: number;
};
const model = repeatingTextModel(`summary by ${spec.owner}`);
const delivered: string[] = [];
const sink: OutputSink = {
  destinations: ["staff-inbox"],
  deliver: async (o: RoutineOutput) => {
    delivered.push(o.deliveryId);
  },
};
const clock = new ManualClock(spec.now);
const rt = await postgres({
  clients: [model],
  policy: {
    resolve: () => ({ clientId: "fake", model: "demo", maxOutputTokens: 256, cache: false }),
  },
  prompt: "nightly",
  trailKey: "worker-trail-key-shared-by-every-process",
  clock,
  ...DEPLOYMENT,
  store: {
    connectionString: process.env.ALMA_TEST_DATABASE_URL,
    schema: spec.schema,
    rootSchema: spec.rootSchema,
  },
});
const scheduler = routineScheduler(rt, { sink, owner: spec.owner, clock });
// Both processes tick at the same instant, so their claims of the same slots race in the database.
await new Promise((resolve) => setTimeout(resolve, Math.max(0, spec.startAt - Date.now())));
const report = await scheduler.tick();
process.stdout.write(
  `${JSON.stringify({ owner: spec.owner, ran: report.ran.map((r) => [r.slot, r.state]), skipped: report.skipped, calls: model.calls, delivered })}\n`,
);
await rt.close();
