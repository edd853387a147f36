import { EnvError } from "../config/env.js";
import { CliError, type ParsedArgs, parseArgs } from "./args.js";
import { ASKS_HELP, asksCommand } from "./asks.js";
import { CHAT_HELP, chatCommand } from "./chat.js";
import {
  ERASE_HELP,
  eraseCommand,
  MIGRATE_HELP,
  migrateCommand,
  SESSIONS_HELP,
  sessionsCommand,
  TOKEN_HELP,
  TRAILS_HELP,
  tokenCommand,
  trailsCommand,
} from "./commands.js";
import { CONSOLE_HELP, consoleCommand } from "./console.js";
import { type CliIo, write } from "./context.js";
import { DOCTOR_HELP, doctorCommand } from "./doctor.js";
import { FENCE_HELP, fenceCommand } from "./fence.js";
import { ROUTINES_HELP, routinesCommand } from "./routines.js";
import { SERVE_HELP, serveCommand } from "./serve.js";

interface Command {
  readonly help: string;
  readonly flags: readonly string[];
  readonly booleans?: readonly string[];
  readonly run: (args: ParsedArgs, io: CliIo) => Promise<number>;
}

const CLIENT = ["url"];
const TENANT = [...CLIENT, "token", "org", "uid"];
const ADMIN = [...CLIENT, "admin-token"];

const COMMANDS: Readonly<Record<string, Command>> = {
  serve: { help: SERVE_HELP, flags: ["port", "host"], booleans: ["quiet"], run: serveCommand },
  chat: { help: CHAT_HELP, flags: [...TENANT, "session"], run: chatCommand },
  asks: { help: ASKS_HELP, flags: [...ADMIN, "org"], run: asksCommand },
  console: { help: CONSOLE_HELP, flags: ADMIN, run: consoleCommand },
  sessions: { help: SESSIONS_HELP, flags: [...ADMIN, "org"], run: sessionsCommand },
  trails: { help: TRAILS_HELP, flags: [...ADMIN, "org", "uid"], run: trailsCommand },
  fence: {
    help: FENCE_HELP,
    flags: [...ADMIN, "org", "uid", "reason"],
    booleans: ["lift", "list"],
    run: fenceCommand,
  },
  erase: { help: ERASE_HELP, flags: [...TENANT, "session"], run: eraseCommand },
  routines: {
    help: ROUTINES_HELP,
    flags: [...ADMIN, "org", "state", "routine", "slot", "action"],
    run: routinesCommand,
  },
  migrate: { help: MIGRATE_HELP, flags: [], run: migrateCommand },
  token: { help: TOKEN_HELP, flags: ["org", "uid", "ttl"], run: tokenCommand },
  doctor: { help: DOCTOR_HELP, flags: CLIENT, run: doctorCommand },
};

export const MAIN_HELP = `alma: the Alma host's command line.

Usage: alma <command> [options]   (alma <command> --help for each)
  serve     serve the clinic agent, its API and the operator console
  chat      chat with the agent of a running host, as a patient
  asks      list, approve or deny the asks waiting for an operator (operator)
  console   print the operator console's login link (operator)
  sessions  list each tenant's sessions (operator)
  trails    print a turn's audit trails as a timeline (operator)
  fence     fence a tenant or one person, lift it, list fences (operator)
  erase     erase one of your sessions
  routines  the routines on a clock, their runs and results; tick, resolve (operator)
  migrate   bring the store's schema up to date
  token     mint a dev tenant token
  doctor    check the setup and the provider`;

function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s*\n\s*/g, " ");
}

/** Runs one command; every failure is one line on stderr and a non-zero exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "help" || name === "-h") {
    write(name === undefined ? io.stderr : io.stdout, MAIN_HELP);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    write(io.stderr, `alma: unknown command "${name}" (alma --help lists them)`);
    return 2;
  }
  try {
    const args = parseArgs(rest, command.flags, command.booleans ?? []);
    if (args.flags.has("help")) {
      write(io.stdout, command.help);
      return 0;
    }
    return await command.run(args, io);
  } catch (error) {
    write(io.stderr, `alma ${name}: ${oneLine(error)}`);
    return error instanceof CliError ? error.exitCode : error instanceof EnvError ? 2 : 1;
  }
}
