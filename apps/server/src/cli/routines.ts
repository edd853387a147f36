import { microsToUsd } from "@alma-harness/core";
import { CliError, flag, type ParsedArgs } from "./args.js";
import { adminToken, api, baseUrl, type CliIo, write } from "./context.js";

export const ROUTINES_HELP = `alma routines: the routines on a clock, their runs and their results (operator).

Usage: alma routines [list]                     the routines and the last scheduler tick
       alma routines runs [--org ORG] [--state STATE]
       alma routines tick                       run one scheduler tick now
       alma routines inbox [--org ORG]          the results delivered to the staff inbox
       alma routines resolve --org ORG --routine ID --slot MS --action abandon|confirm_completed|rerun
A run left reconciliation_required (its process died mid-run, its turn or delivery was uncertain)
is never run again by itself: check the turn and the inbox, then abandon it, confirm it completed,
or rerun it (a new attempt, a new turn, paid again). Options: [--url URL] [--admin-token TOKEN]`;

interface RoutineRow {
  readonly org: string;
  readonly id: string;
  readonly schedule: { readonly cron: string; readonly timeZone: string };
  readonly cap: { readonly usd: number; readonly onExceeded: string };
  readonly enabled: boolean;
  readonly catchUp: boolean;
  readonly execution: string;
}

interface RunRow {
  readonly org: string;
  readonly routineId: string;
  readonly slot: number;
  readonly slotAt: string;
  readonly attempt: number;
  readonly state: string;
  readonly reason?: string;
  readonly costMicros?: number;
  readonly capsCrossed?: readonly string[];
}

const describeRun = (r: RunRow) =>
  `  ${r.org}  ${r.routineId}  ${r.slotAt} (${r.slot})  #${r.attempt}  ${r.state}${r.reason ? ` (${r.reason})` : ""}${r.costMicros !== undefined ? `  $${microsToUsd(r.costMicros)}` : ""}${r.capsCrossed ? `  crossed ${r.capsCrossed.join(",")}` : ""}`;

const ACTIONS = ["abandon", "confirm_completed", "rerun"];

/** What every subcommand reads: the parsed arguments, the streams, the host's URL and the operator's token. */
interface AdminCall {
  readonly args: ParsedArgs;
  readonly io: CliIo;
  readonly base: string;
  readonly token: string;
}

const SUBCOMMANDS: ReadonlyMap<string, (call: AdminCall) => Promise<void>> = new Map([
  ["list", listRoutines],
  ["runs", listRuns],
  ["tick", tickNow],
  ["inbox", readInbox],
  ["resolve", resolveRun],
]);

export async function routinesCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const sub = args.positional[0] ?? "list";
  const base = baseUrl(args, io);
  const token = adminToken(args, io);
  const run = SUBCOMMANDS.get(sub);
  if (!run)
    throw new CliError(
      `alma routines: unknown subcommand "${sub}" (list, runs, tick, inbox, resolve)`,
    );
  await run({ args, io, base, token });
  return 0;
}

async function listRoutines({ io, base, token }: AdminCall): Promise<void> {
  const { body } = await api<{
    routines: RoutineRow[];
    lastTick: { at: number; ran: number; missed: number } | null;
  }>(base, "/v1/admin/routines", { token });
  write(
    io.stdout,
    `${body.routines.length} routine(s); last tick ${body.lastTick ? `${new Date(body.lastTick.at).toISOString()}: ${body.lastTick.ran} ran, ${body.lastTick.missed} missed` : "not yet"}`,
  );
  for (const r of body.routines) {
    write(
      io.stdout,
      `  ${r.org}  ${r.id}  "${r.schedule.cron}" ${r.schedule.timeZone}  cap $${r.cap.usd} (${r.cap.onExceeded})  ${r.execution}${r.catchUp ? "  catch-up" : ""}${r.enabled ? "" : "  paused"}`,
    );
  }
}

async function listRuns({ args, io, base, token }: AdminCall): Promise<void> {
  const q = new URLSearchParams();
  for (const name of ["org", "state"])
    if (flag(args, name)) q.set(name, flag(args, name) as string);
  const { body } = await api<{ runs: RunRow[] }>(
    base,
    `/v1/admin/routines/runs${q.size > 0 ? `?${q}` : ""}`,
    { token },
  );
  write(io.stdout, `${body.runs.length} run(s)`);
  for (const r of body.runs) write(io.stdout, describeRun(r));
}

async function tickNow({ io, base, token }: AdminCall): Promise<void> {
  const { body } = await api<{
    tick: {
      ran: number;
      missed: number;
      submitted: number;
      interrupted: number;
      skipped: number;
      errors: unknown[];
    };
  }>(base, "/v1/admin/routines/tick", { token, method: "POST" });
  const t = body.tick;
  write(
    io.stdout,
    `tick: ${t.ran} ran, ${t.missed} missed, ${t.submitted} submitted, ${t.interrupted} interrupted, ${t.skipped} held elsewhere, ${t.errors.length} error(s)`,
  );
}

async function readInbox({ args, io, base, token }: AdminCall): Promise<void> {
  const org = flag(args, "org");
  const { body } = await api<{
    messages: { org: string; routineId: string; deliveryId: string; text: string }[];
  }>(base, `/v1/admin/routines/inbox${org ? `?org=${encodeURIComponent(org)}` : ""}`, { token });
  write(io.stdout, `${body.messages.length} message(s)`);
  for (const m of body.messages)
    write(io.stdout, `  ${m.deliveryId}  ${m.text.replace(/\s*\n\s*/g, " ")}`);
}

/** An operator's decision on a run left reconciliation_required: every flag is required, the action closed. */
async function resolveRun({ args, io, base, token }: AdminCall): Promise<void> {
  const org = flag(args, "org");
  const routine = flag(args, "routine");
  const slot = flag(args, "slot");
  const action = flag(args, "action");
  if (!org || !routine || !slot || !action)
    throw new CliError(
      "alma routines resolve needs --org, --routine, --slot and --action (see --help)",
    );
  if (!ACTIONS.includes(action)) throw new CliError(`--action must be ${ACTIONS.join(", ")}`);
  const path = `/v1/admin/routines/${encodeURIComponent(org)}/${encodeURIComponent(routine)}/runs/${encodeURIComponent(slot)}/resolve`;
  const { body } = await api<{ run: RunRow }>(base, path, {
    token,
    method: "POST",
    body: { action },
  });
  write(io.stdout, `resolved:${describeRun(body.run).slice(1)}`);
}
