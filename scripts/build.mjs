// `npm run build`: every workspace's own build script, in dependency order.
import { execFileSync } from "node:child_process";
import { topological, workspaces } from "./workspaces.mjs";

for (const w of topological(workspaces())) {
  if (!w.pkg.scripts?.build) continue;
  console.log(`build ${w.name}`);
  execFileSync("npm", ["run", "build", "--silent", "-w", w.name], { stdio: "inherit" });
}
