import type { Block, MsgMeta } from "@alma-harness/core";
import { startTimer } from "@alma-harness/execution";
import type { ResolvedConfig } from "./config.js";
import { boundedCopy, inputContent } from "./input.js";
import type { NormalizedRequest } from "./request.js";
import { inputRevisionOf } from "./root.js";

/** The turn's content, or why the turn cannot have it (the turn is then uncertain with that cause). */
export type LoadedContent =
  | { readonly ok: true; readonly blocks: readonly Block[]; readonly meta?: MsgMeta }
  | { readonly ok: false; readonly cause: "input" | "deadline" | "cancelled" | "commit" };

const DEADLINE = Symbol("deadline");
const CANCELLED = Symbol("cancelled");

/**
 * The turn's content. Inline content is the request's. An explicit root's `loadInput` runs here,
 * after admission, the root claim and the pending final-result reservation (seed 002) are committed
 * (a store set's durability point; a failed commit is cause `commit`), once, under
 * the turn's deadline and signal; what it returns is checked by the input rules a simple request's
 * input meets (plain bounded JSON, no accessor run, no Proxy, at most `maxInputChars`, no
 * `meta.event`), and a conversation-v1 root's by its inputRevision too. A throw, an invalid value
 * or a mismatch is cause `input`; the deadline or the caller's signal first, `deadline` or
 * `cancelled`.
 */
export async function loadContent(
  config: ResolvedConfig,
  request: NormalizedRequest,
  deadlineAt: number,
): Promise<LoadedContent> {
  const { content } = request;
  if (content.type === "inline")
    return { ok: true, blocks: content.blocks, ...(content.meta ? { meta: content.meta } : {}) };
  try {
    // `loadInput` is host code: what precedes it (admission, claim, reservation) is committed first,
    // so a concurrent delivery reads it (busy, in_progress) rather than waiting on the unit.
    await config.stores.barrier?.commit();
  } catch {
    return { ok: false, cause: "commit" };
  }
  let value: unknown;
  try {
    value = await loadWithin(config, request, deadlineAt);
  } catch (error) {
    if (error === DEADLINE) return { ok: false, cause: "deadline" };
    if (error === CANCELLED) return { ok: false, cause: "cancelled" };
    return { ok: false, cause: "input" };
  }
  try {
    const copy = boundedCopy({ input: value }, config.maxInputChars, "request.input");
    const { blocks } = inputContent(copy.input, config.maxInputChars, false);
    if (
      content.inputRevision !== undefined &&
      inputRevisionOf(config, { ...content.bound, input: copy.input ?? null }) !==
        content.inputRevision
    )
      return { ok: false, cause: "input" };
    return { ok: true, blocks };
  } catch {
    return { ok: false, cause: "input" };
  }
}

/** Calls `loadInput` once and races it against the turn's deadline and the caller's signal. */
function loadWithin(
  config: ResolvedConfig,
  request: NormalizedRequest,
  deadlineAt: number,
): Promise<unknown> {
  const { content, signal } = request;
  if (content.type !== "lazy") throw new TypeError("only a lazy input is loaded");
  const control = new AbortController();
  return new Promise<unknown>((resolve, reject) => {
    const end = (settle: () => void) => {
      stop();
      signal?.removeEventListener("abort", onAbort);
      settle();
    };
    const onAbort = () => {
      control.abort(signal?.reason);
      end(() => reject(CANCELLED));
    };
    const stop = startTimer(config.clock, Math.max(0, deadlineAt - config.clock.now()), () => {
      control.abort(new Error("deadline"));
      end(() => reject(DEADLINE));
    });
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) return onAbort();
    const context = Object.freeze({ rootKey: request.rootKey, signal: control.signal });
    Promise.resolve()
      .then(() => content.load(context))
      .then(
        (value) => end(() => resolve(value)),
        (error: unknown) => end(() => reject(error)),
      );
  });
}
