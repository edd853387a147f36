// A separate OS process contending for the same claims and admissions on one SQLite file.
import { createSqliteStores } from "../src/index.js";

const [path, worker, count] = process.argv.slice(2) as [string, string, string];
const stores = createSqliteStores({ path, synchronous: "normal", busyTimeoutMs: 20_000 });
const scope = { org: "org-a", uid: "user-1" };
const won: string[] = [];
for (let i = 0; i < Number(count); i++) {
  const result = await stores.execution.claim({
    scope,
    operationId: `op-${i}`,
    sessionId: "s1",
    rootKey: "root",
    turnId: "turn",
    kind: "main",
    clientId: "c",
    model: "m",
    priceVersion: "p",
    policyVersion: "q",
    createdAt: 1,
    deadlineAt: 2,
  });
  if (result.status === "claimed") won.push(`op-${i}`);
  const admit = await stores.admissions.admit({
    scope,
    sessionId: `s-${i}`,
    rootKey: "root",
    kind: "turn",
    admissionId: `adm-${worker}-${i}`,
    now: 1,
    deadlineAt: 10,
  });
  if (admit.status === "admitted") won.push(`s-${i}`);
}
stores.close();
process.stdout.write(JSON.stringify(won));
