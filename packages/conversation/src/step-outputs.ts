import type { CostReceipt } from "@alma-harness/core";
import type { LoopEvent } from "@alma-harness/loop";
import type { ResolvedConfig } from "./config.js";
import type { NormalizedRequest } from "./input.js";

/** What a stream reader sees before the result: settled main-step text and metadata only. */
export type ProgressEvent =
  | { readonly type: "text"; readonly step: number; readonly text: string }
  | { readonly type: "tool"; readonly callId: string; readonly name: string; readonly isError: boolean }
  | { readonly type: "usage"; readonly receipt: CostReceipt };

export type ProgressListener = (event: ProgressEvent | { readonly type: "unavailable" } | { readonly type: "read_failed" }) => void;

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
    private readonly request: NormalizedRequest,
    private readonly rootKey: string,
  ) {}

  readonly sink = (event: LoopEvent): void => {
    if (event.type === "step.text") this.enqueue(() => this.storeText(event.step, event.text));
    // Metadata is only for a reader: with no listener (runTurn) nothing is queued for it.
    else if (this.listener === undefined) return;
    else if (event.type === "tool.result") this.enqueue(async () => this.listener?.({ type: "tool", callId: event.callId, name: event.name, isError: event.isError }));
    else if (event.type === "cost.receipt" && event.receipt.kind === "main") this.enqueue(async () => this.listener?.({ type: "usage", receipt: event.receipt }));
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
    if (this.listener !== undefined) await stores.barrier?.commit();
    const envelope = fresh.envelope as { step: number; text: string };
    this.listener?.({ type: "text", step: envelope.step, text: envelope.text });
  }

  async drain(): Promise<boolean> {
    await this.chain;
    return !this.failed;
  }
}
