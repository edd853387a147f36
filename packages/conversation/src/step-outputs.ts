import { type LoopEvent, type ProgressEvent, progressOf } from "@alma-harness/loop";
import type { ResolvedConfig } from "./config.js";
import type { NormalizedRequest } from "./request.js";

/** What a stream reader sees before the result: the loop's one progress vocabulary. */
export type { ProgressEvent };

export type ProgressListener = (
  event: ProgressEvent | { readonly type: "unavailable" } | { readonly type: "read_failed" },
) => void;

/**
 * Stores each settled main step's text (sensitivity, retention, character cap) before any observer
 * sees it, then releases it after a fresh read of the stored record. Events keep their order: they
 * pass through one chain. `drain` waits for the chain and says whether every write succeeded.
 */
export class StepOutputs {
  private chain: Promise<void> = Promise.resolve();
  private failed = false;
  listener: ProgressListener | undefined;

  constructor(
    private readonly config: ResolvedConfig,
    private readonly request: Pick<NormalizedRequest, "scope" | "sessionId" | "intent">,
    private readonly rootKey: string,
  ) {}

  readonly sink = (event: LoopEvent): void => {
    const progress = progressOf(event);
    if (progress === undefined) return;
    // Text is stored before anyone sees it; metadata is only for a reader (none with runTurn).
    if (progress.type === "text") this.enqueue(() => this.storeText(progress.step, progress.text));
    else if (this.listener !== undefined) this.enqueue(async () => this.listener?.(progress));
  };

  private enqueue(work: () => Promise<void>): void {
    this.chain = this.chain.then(work).catch(() => {
      this.failed = true;
    });
  }

  private async storeText(step: number, text: string): Promise<void> {
    const { stores, clock } = this.config;
    const resultId = `${this.rootKey}:step:${step}`;
    const now = clock.now();
    await stores.results.reserve({
      scope: this.request.scope,
      resultId,
      sessionId: this.request.sessionId,
      binding: this.rootKey,
      sensitivity: this.request.intent.sensitivity,
      maxChars: this.config.maxResultChars,
      expiresAt: now + this.config.resultRetentionMs,
      createdAt: now,
    });
    await stores.results.put(this.request.scope, resultId, { step, text }, now);
    // Nobody reads the stream (runTurn): the put is the whole of it, no read-back to show.
    if (this.listener === undefined) return;
    let fresh: Awaited<ReturnType<typeof stores.results.get>>;
    try {
      fresh = await stores.results.get(this.request.scope, resultId, clock.now());
    } catch (error) {
      this.listener?.({ type: "read_failed" });
      throw error;
    }
    if (fresh?.state !== "stored") {
      this.listener?.({ type: "unavailable" });
      return;
    }
    // Shown only once it is durable: a store set that groups writes commits it first.
    await stores.barrier?.commit();
    const envelope = fresh.envelope as { step: number; text: string };
    this.listener?.({ type: "text", step: envelope.step, text: envelope.text });
  }

  async drain(): Promise<boolean> {
    await this.chain;
    return !this.failed;
  }
}
