/** A CLI failure: printed as one line on stderr, with a non-zero exit. */
export class CliError extends Error {
  override readonly name = "CliError";
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export interface ParsedArgs {
  readonly positional: readonly string[];
  readonly flags: ReadonlyMap<string, string | true>;
}

/**
 * `--name value`, `--name=value` and boolean `--name` (when `name` is in `booleans`); `--` ends the
 * flags. An unknown flag is an error, so a typo never silently changes what a command does.
 */
export function parseArgs(
  argv: readonly string[],
  known: readonly string[],
  booleans: readonly string[] = [],
): ParsedArgs {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] as string;
    if (arg === "--") {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("--")) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq >= 0 ? eq : undefined);
    if (name === "help" || booleans.includes(name)) {
      if (eq >= 0) throw new CliError(`--${name} takes no value`);
      flags.set(name, true);
      continue;
    }
    if (!known.includes(name)) throw new CliError(`unknown option --${name} (see --help)`);
    const value = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === "") throw new CliError(`--${name} needs a value`);
    flags.set(name, value);
  }
  return { positional, flags };
}

export function flag(args: ParsedArgs, name: string): string | undefined {
  const value = args.flags.get(name);
  return typeof value === "string" ? value : undefined;
}

export function has(args: ParsedArgs, name: string): boolean {
  return args.flags.has(name);
}
