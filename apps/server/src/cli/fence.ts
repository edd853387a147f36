import { CliError, flag, type ParsedArgs } from "./args.js";
import { adminToken, api, baseUrl, type CliIo, write } from "./context.js";

export const FENCE_HELP = `alma fence: fence a tenant or one person, lift it, or list the fences (operator).

Usage: alma fence --org ORG [--uid UID] [--reason suspended|erasure|operator] [--url URL] [--admin-token TOKEN]
       alma fence --org ORG [--uid UID] --lift
       alma fence --org ORG --list
Without --uid the whole tenant is fenced: a new turn or event batch of anyone in it is refused
(HTTP 423, scope_fenced), a stored turn still replays, and a turn running now ends
reconciliation_required at its next step. Erasure still works under a fence. --reason defaults to
operator. Lifting a tenant's fence does not lift a person's (lift each).`;

interface FenceRow {
  readonly org: string;
  readonly uid?: string;
  readonly reason: string;
  readonly fencedAt: number;
}

const describeFence = (f: FenceRow) =>
  `${f.org}/${f.uid ?? "*"}  ${f.reason}  since ${new Date(f.fencedAt).toISOString()}`;

export async function fenceCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const org = flag(args, "org");
  if (!org) throw new CliError("alma fence needs --org ORG (see --help)");
  const reason = flag(args, "reason");
  if (reason !== undefined && !["suspended", "erasure", "operator"].includes(reason))
    throw new CliError("--reason must be suspended, erasure or operator");
  const uid = flag(args, "uid");
  const base = baseUrl(args, io);
  const token = adminToken(args, io);
  const tenant = `/v1/admin/tenants/${encodeURIComponent(org)}`;
  if (args.flags.get("list") === true) {
    const { body } = await api<{ fences: FenceRow[] }>(base, `${tenant}/fences`, { token });
    write(io.stdout, `${org}: ${body.fences.length} fence(s)`);
    for (const f of body.fences) write(io.stdout, `  ${describeFence(f)}`);
    return 0;
  }
  const path =
    uid === undefined ? `${tenant}/fence` : `${tenant}/people/${encodeURIComponent(uid)}/fence`;
  if (args.flags.get("lift") === true) {
    const { body } = await api<{ lifted: boolean }>(base, path, { token, method: "DELETE" });
    write(
      io.stdout,
      body.lifted ? `lifted the fence on ${org}/${uid ?? "*"}` : `no fence on ${org}/${uid ?? "*"}`,
    );
    return 0;
  }
  const { body, status } = await api<{ fence: FenceRow }>(base, path, {
    token,
    method: "PUT",
    body: { reason: reason ?? "operator" },
  });
  write(io.stdout, `${status === 201 ? "fenced" : "already fenced"}: ${describeFence(body.fence)}`);
  return 0;
}
