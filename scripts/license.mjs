// `prepack`/`postpack` of every package: npm packs a package's own LICENSE file only, so the
// repository's LICENSE (Apache-2.0) is copied in before `npm pack`/`npm publish` and removed after.
// The copies are git-ignored: the root file is the one kept.
import { copyFileSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../LICENSE", import.meta.url));
if (process.argv[2] === "remove") rmSync("LICENSE", { force: true });
else copyFileSync(root, "LICENSE");
