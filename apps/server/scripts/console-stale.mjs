// Whether the operator console's bundle (public/) is missing or older than what it is built from
// (console/ and the host sources it imports), so that `npm start` and `npm test` rebuild it after a
// pull instead of serving yesterday's console.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/** The newest modification time of the files under `dir` (0 when there are none). */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/** `server`: the apps/server folder. */
export function consoleStale(server) {
  const bundle = join(server, "public", "index.html");
  if (!existsSync(bundle)) return true;
  const sources = Math.max(
    newest(join(server, "console")),
    statSync(join(server, "src", "sse-events.ts")).mtimeMs,
  );
  return sources > statSync(bundle).mtimeMs;
}
