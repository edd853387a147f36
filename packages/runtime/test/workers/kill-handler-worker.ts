// A host process that runs one tool turn on a SQLite file with grouped commits (the sqlite()
// default) and kills itself with SIGKILL inside the tool's handler. One JSON line per event on
// stdout (pipes are synchronous on Linux, so a line written before the kill is read).
//   argv[2]: JSON {path, pure}: the tool declared pure or not.
import { createConversationRunner } from "@alma-harness/conversation";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { KILL_REQUEST, killConfig } from "./kill-config.js";

const spec = JSON.parse(process.argv[2] ?? "{}") as { path: string; pure: boolean };
const out = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);

const stores = createSqliteStores({ path: spec.path, commits: "grouped" });
const runner = createConversationRunner({
  ...killConfig((afterTool) => out({ type: "dispatch", afterTool }), {
    pure: spec.pure,
    handler: () => {
      out({ type: "kill", at: "handler" });
      process.kill(process.pid, "SIGKILL");
      return new Promise<never>(() => undefined);
    },
  }),
  stores,
});
const view = await runner.runTurn(KILL_REQUEST);
out({ type: "view", status: view.status });
stores.close();
