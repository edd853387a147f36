// A host process for the single-call multi-process test: composes its own runtime on the shared
// database (PostgreSQL or one SQLite file), with the real Anthropic adapter pointed at the parent's
// local HTTP server, and runs one step call under the shared key at the shared instant.
// Prints one JSON line: the result, or the error's code.
//   argv[2]: JSON {store: "postgres" | "sqlite", schema?, rootSchema?, path?, url, key, barrier?}
//   With `barrier` (a directory), it writes `ready-<pid>` there once its runtime is composed, then
//   waits for `go`, so every process calls at once however long each took to start.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createAnthropicClient } from "@alma-harness/providers";
import { postgres, type Runtime, sqlite } from "@alma-harness/runtime";
import {
  WIRE_STEP_POLICY,
  WIRE_STEP_PRICES,
  WIRE_STEP_SCOPE,
  wireStep,
} from "../anthropic-wire-kit.js";
import { DEPLOYMENT } from "./deployment.js";

const spec = JSON.parse(process.argv[2] ?? "{}") as {
  store: "postgres" | "sqlite";
  schema: string;
  rootSchema: string;
  path: string;
  url: string;
  key: string;
  barrier?: string;
};
const config = {
  ...DEPLOYMENT,
  clients: [createAnthropicClient({ apiKey: "sk-ant-test", baseURL: spec.url })],
  policy: WIRE_STEP_POLICY,
  prices: WIRE_STEP_PRICES,
  prompt: "single calls",
  trailKey: "step-worker-trail-key-shared-by-every-process",
};
const rt: Runtime =
  spec.store === "postgres"
    ? await postgres({
        ...config,
        store: {
          connectionString: process.env.ALMA_TEST_DATABASE_URL,
          schema: spec.schema,
          rootSchema: spec.rootSchema,
        },
      })
    : sqlite({ ...config, store: { path: spec.path } });
try {
  // Every process calls at once, so their reservations of the key race in the database.
  if (spec.barrier !== undefined) {
    writeFileSync(join(spec.barrier, `ready-${process.pid}`), "");
    while (!existsSync(join(spec.barrier, "go")))
      await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const line = await rt.steps.run(wireStep(WIRE_STEP_SCOPE, spec.key)).then(
    (r) =>
      r.status === "completed"
        ? {
            status: r.status,
            replayed: r.replayed,
            object: r.object,
            usdMicros: r.receipt.usdMicros,
          }
        : { status: r.status },
    (e: unknown) => ({ error: (e as { code?: string }).code ?? String(e) }),
  );
  process.stdout.write(`${JSON.stringify({ pid: process.pid, ...line })}\n`);
} finally {
  await rt.close();
}
