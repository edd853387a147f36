import type { ParsedArgs } from "./args.js";
import { adminToken, api, baseUrl, type CliIo, write } from "./context.js";

export const CONSOLE_HELP = `alma console: print the operator console's login link for a running host.

Usage: alma console [--url URL] [--admin-token TOKEN]
The link carries the operator token in its fragment (#admin=…), which the browser never sends:
the console reads it, keeps it in the tab's session storage and removes it from the address bar and
the history. The token is checked against the host first, so a printed link logs in.`;

/** Checks the operator token against the host, then prints `URL/#admin=TOKEN`. */
export async function consoleCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const base = baseUrl(args, io);
  const token = adminToken(args, io);
  // A refused token is a one-line CliError naming the host's answer (401 unauthorized).
  await api(base, "/v1/admin/tenants", { token });
  write(io.stdout, `${base}/#admin=${encodeURIComponent(token)}`);
  return 0;
}
