// A second OS process collecting a model job another process submitted: the same SQLite file, the
// same provider (the parent's local HTTP server), nothing shared in memory. Prints one JSON line.
import { createAnthropicBatchTransport } from "@alma-harness/providers";
import { modelJobs } from "@alma-harness/runtime";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { WIRE_JOB_KEY, WIRE_POLICY, WIRE_PRICES, WIRE_SCOPE } from "./wire-config.js";

const spec = JSON.parse(process.argv[2] ?? "{}") as { path: string; url: string; jobId: string };
const stores = createSqliteStores({ path: spec.path, commits: "each" });
try {
  const transport = createAnthropicBatchTransport({
    id: "anthropic-batch",
    apiKey: "sk-test",
    baseURL: spec.url,
    fetch,
  });
  const jobs = modelJobs({
    stores,
    prices: WIRE_PRICES,
    policyVersion: "p",
    trailKey: WIRE_JOB_KEY,
    transports: [transport],
    policy: WIRE_POLICY,
  });
  const out = await jobs.collect(WIRE_SCOPE, spec.jobId);
  const items =
    out.status === "collected"
      ? out.items.map((i) => [i.customId, i.outcome, i.receipt.usdMicros, i.applied])
      : [];
  process.stdout.write(`${JSON.stringify({ status: out.status, state: out.job.state, items })}\n`);
} finally {
  stores.close();
}
