import type { JsonObject, ToolResultBlock } from "@alma-harness/core";
import { checkpoint, raceOwned } from "./cancel.js";
import { UncertainTurnError } from "./errors.js";
import type { ToolRun } from "./tool-run.js";

type Hooked = Pick<ToolRun, "rec" | "hooks">;

/**
 * `tool:pre` for a call about to run (a host tool, or the engine's search): committed before, raced
 * against the signal. Returns the hook's denial text, or nothing. A hook nobody registered costs
 * nothing: only the checkpoint it would have passed remains.
 */
export async function toolPre(
  { rec, hooks }: Hooked,
  callId: string,
  name: string,
  input: JsonObject,
  signal: AbortSignal,
): Promise<string | undefined> {
  const hook = hooks["tool:pre"];
  if (!hook) {
    checkpoint(signal);
    return undefined;
  }
  await rec.commit();
  const frozen = Object.freeze({ turnId: rec.turnId, callId, name, input });
  const pre = await runHook(signal, "tool:pre", () => hook(frozen));
  const deny = pre && typeof pre === "object" ? (pre as { deny?: unknown }).deny : undefined;
  return typeof deny === "string" ? deny : undefined;
}

/**
 * `tool:post` after a call that ran. A call that ran keeps its real result: a stop during (or
 * before) the hook does not erase it, and a hook that throws once the turn is stopping is ignored.
 */
export async function toolPost(
  { rec, hooks }: Hooked,
  name: string,
  block: ToolResultBlock,
  signal: AbortSignal,
): Promise<void> {
  const hook = hooks["tool:post"];
  if (signal.aborted || !hook) return;
  await rec.commit();
  const post = Object.freeze({
    turnId: rec.turnId,
    callId: block.callId,
    name,
    output: block.output,
    isError: block.isError,
  });
  try {
    await runHook(signal, "tool:post", () => hook(post));
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}

async function runHook<T>(
  signal: AbortSignal,
  name: "tool:pre" | "tool:post",
  run: () => T | Promise<T> | undefined,
): Promise<T | undefined> {
  checkpoint(signal);
  try {
    return await raceOwned(new Promise<T | undefined>((resolve) => resolve(run())), signal);
  } catch (error) {
    if (signal.aborted) throw error;
    throw new UncertainTurnError(`hook:${name}`, `the ${name} hook threw`, error);
  }
}
