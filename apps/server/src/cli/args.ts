import { parseArgs as parseArgsUtil } from "node:util";

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

/** `node:util`'s parse errors, by code, as the one line the CLI prints. */
function parseError(error: unknown, argv: readonly string[]): CliError {
  const code = (error as { code?: unknown }).code;
  const message = (error as Error).message ?? String(error);
  const named = /'(-{1,2}[^' =]+)/.exec(message)?.[1] ?? "";
  const name = named.replace(/^-+/, "");
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION")
    return new CliError(`unknown option ${named || argv.join(" ")} (see --help)`);
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE")
    return new CliError(
      /does not take an argument/.test(message)
        ? `--${name} takes no value`
        : /ambiguous/.test(message)
          ? `--${name} needs a value (--${name}=VALUE when the value starts with -)`
          : `--${name} needs a value`,
    );
  return new CliError(message.split("\n")[0] ?? message);
}

/**
 * `--name value`, `--name=value` and boolean `--name` (when `name` is in `booleans`), with
 * `node:util`'s `parseArgs` (strict); `--` ends the flags; `-h` is `--help`. An unknown flag is an
 * error, so a typo never silently changes what a command does; so is a flag with no value (`--org`
 * last, or followed by another flag) and an empty one.
 */
export function parseArgs(
  argv: readonly string[],
  known: readonly string[],
  booleans: readonly string[] = [],
): ParsedArgs {
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {
    help: { type: "boolean", short: "h" },
  };
  for (const name of known) options[name] = { type: "string" };
  for (const name of booleans) options[name] = { type: "boolean" };
  let parsed: ReturnType<typeof parseArgsOf>;
  try {
    parsed = parseArgsOf(argv, options);
  } catch (error) {
    throw parseError(error, argv);
  }
  const flags = new Map<string, string | true>();
  for (const [name, value] of Object.entries(parsed.values)) {
    if (value === true) flags.set(name, true);
    else if (typeof value === "string") {
      if (value === "") throw new CliError(`--${name} needs a value`);
      flags.set(name, value);
    }
  }
  return { positional: parsed.positionals, flags };
}

function parseArgsOf(
  argv: readonly string[],
  options: Record<string, { type: "string" | "boolean"; short?: string }>,
) {
  return parseArgsUtil({ args: [...argv], options, strict: true, allowPositionals: true });
}

export function flag(args: ParsedArgs, name: string): string | undefined {
  const value = args.flags.get(name);
  return typeof value === "string" ? value : undefined;
}

export function has(args: ParsedArgs, name: string): boolean {
  return args.flags.has(name);
}
