import { CliError, flag, type ParsedArgs } from "./args.js";
import { adminToken, api, baseUrl, type CliIo, write } from "./context.js";

export const ASKS_HELP = `alma asks: the permission asks waiting for an operator; approve or deny one.

Usage: alma asks [--org ORG] [--url URL] [--admin-token TOKEN]
       alma asks approve <askId>
       alma asks deny <askId>
Asks are read from the store: a turn parked on an ask survives a restart of the host, and the
decision resumes it in whichever process takes it. An ask nobody decides before its expiry is
denied by the kernel (never reported as an operator's denial).`;

interface AskRow {
  readonly id: string;
  readonly org: string;
  readonly uid: string;
  readonly sessionId: string;
  readonly tool: string;
  readonly action: string;
  readonly input: unknown;
  readonly ageMs: number;
  readonly expiresAt?: number;
}

const minutes = (ms: number) => `${Math.max(0, Math.round(ms / 60_000))} min`;

function describeAsk(a: AskRow, now: number): string {
  const expiry = a.expiresAt === undefined ? "" : `, expires in ${minutes(a.expiresAt - now)}`;
  return `${a.id}  ${a.org}/${a.uid}  session ${a.sessionId}  ${a.tool} ${JSON.stringify(a.input)}  (asked ${minutes(a.ageMs)} ago${expiry})`;
}

export async function asksCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const base = baseUrl(args, io);
  const token = adminToken(args, io);
  const [verb, askId, ...rest] = args.positional;
  if (verb === undefined) {
    const org = flag(args, "org");
    const query = org ? `?org=${encodeURIComponent(org)}` : "";
    const { body } = await api<{ asks: AskRow[] }>(base, `/v1/admin/asks${query}`, { token });
    write(io.stdout, `${body.asks.length} pending ask(s)`);
    const now = Date.now();
    for (const a of body.asks) write(io.stdout, `  ${describeAsk(a, now)}`);
    return 0;
  }
  if ((verb !== "approve" && verb !== "deny") || !askId || rest.length > 0)
    throw new CliError("usage: alma asks [approve|deny <askId>] (see --help)");
  const path = `/v1/admin/asks/${encodeURIComponent(askId)}/${verb}`;
  const { body } = await api<{ state: string }>(base, path, { token, method: "POST" });
  write(io.stdout, `${askId}: ${body.state}`);
  return 0;
}
