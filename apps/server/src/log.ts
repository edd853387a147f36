import { pino, type Logger, type LevelWithSilent } from "pino";
import { EnvError } from "./config/env.js";

/** The host's logger: one JSON object per line (pino), with a level. */
export type HostLogger = Logger;

const LEVELS: readonly LevelWithSilent[] = [
  "fatal",
  "error",
  "warn",
  "info",
  "debug",
  "trace",
  "silent",
];

/** `ALMA_LOG_LEVEL` (default `info`); anything else is an `EnvError` naming the variable. */
export function logLevel(env: NodeJS.ProcessEnv): LevelWithSilent {
  const raw = env.ALMA_LOG_LEVEL?.trim() || "info";
  if (!(LEVELS as readonly string[]).includes(raw))
    throw new EnvError(`ALMA_LOG_LEVEL must be one of ${LEVELS.join(", ")}`);
  return raw as LevelWithSilent;
}

/**
 * JSON lines on `stream`: `level` as its name, `time` in ISO 8601, `pid`, `msg`, and the fields a
 * call passes. Like the trails, a line carries identifiers, kinds, counts and durations, never
 * content: no prompt, reply, tool input, path (it holds session ids), token or error message.
 * Callers pass only such fields; `errorFields` is how an error is logged.
 */
export function hostLogger(
  stream: NodeJS.WritableStream,
  level: LevelWithSilent = "info",
): HostLogger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    stream as unknown as pino.DestinationStream,
  );
}

/**
 * What an internal error may log: its kind, its code and its stack frames, not its message (a
 * message can quote a session id or a key). The operator reproduces with the frames; the client
 * saw "internal".
 */
export function errorFields(error: unknown): {
  readonly error: string;
  readonly code?: string;
  readonly frames: readonly string[];
} {
  if (!(error instanceof Error)) return { error: "non-Error", frames: [] };
  const code = (error as { code?: unknown }).code;
  const frames = (error.stack ?? "")
    .split("\n")
    .filter((line) => /^\s+at /.test(line))
    .map((line) => line.trim());
  return { error: error.name, ...(typeof code === "string" ? { code } : {}), frames };
}
