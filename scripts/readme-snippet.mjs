// Prints the first fenced code block under a README heading: `node scripts/readme-snippet.mjs
// README.md "Quickstart in code"` (what scripts/pack-check.sh runs outside the repository).
import { readFileSync } from "node:fs";

const [file, heading] = process.argv.slice(2);
const text = readFileSync(file, "utf8");
const at = text.indexOf(`\n## ${heading}\n`);
const block = at < 0 ? null : /```[a-z]*\n([\s\S]*?)```/.exec(text.slice(at));
if (!block) {
  console.error(`readme-snippet: no code block under "## ${heading}" in ${file}`);
  process.exit(1);
}
process.stdout.write(block[1]);
