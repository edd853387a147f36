// A host process that runs one tool turn on a SQLite file (every write its own commit) and kills
// itself with SIGKILL just before or just after its Nth store call. One JSON line per event on
// stdout (pipes are synchronous on Linux, so a line written before the kill is read).
//   argv[2]: JSON {path, killAt, mode: "before" | "after"}; killAt 0 never kills (the count pass).
import { createConversationRunner } from "@alma-harness/conversation";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { tapStore, tapStores } from "@alma-harness/testing";
import { KILL_REQUEST, killConfig } from "./kill-config.js";

const spec = JSON.parse(process.argv[2] ?? "{}") as {
  path: string;
  killAt: number;
  mode: "before" | "after";
};
const out = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
const die = (at: string): Promise<never> => {
  out({ type: "kill", at });
  process.kill(process.pid, "SIGKILL");
  return new Promise<never>(() => undefined);
};

const stores = createSqliteStores({ path: spec.path, commits: "each" });
let calls = 0;
const tapped = tapStores(stores, (name, store) =>
  tapStore(store, async (method, call) => {
    calls += 1;
    const mine = calls;
    const at = `${name}.${method}#${mine}`;
    if (mine === spec.killAt && spec.mode === "before") await die(at);
    try {
      return await call();
    } finally {
      // After the call settled, whether it answered or threw (a store's own refusal is an answer too).
      if (mine === spec.killAt && spec.mode === "after") await die(at);
    }
  }),
);
const runner = createConversationRunner({
  ...killConfig((afterTool) => out({ type: "dispatch", afterTool })),
  stores: tapped,
});
const view = await runner.runTurn(KILL_REQUEST);
out({ type: "view", status: view.status, calls });
stores.close();
