import type { EmbeddingClient, EmbeddingRequest, EmbeddingResult } from "@alma-harness/core";
import { memoryWords } from "@alma-harness/core";

/**
 * A deterministic in-process embedding provider for tests: a text's vector counts, per concept,
 * the words that begin with one of the concept's stems (so "allergies" and "allergic" share the
 * `allerg` stem, "medicine" and "penicillin" the medication concept), plus one last dimension that
 * is always 1 (no vector is zero). Usage is its word count. It records every request; `behaviour`
 * makes it fail (`throw`), or hang until its signal aborts (`hang`, the abort listener removed then).
 */
export class ConceptEmbedding implements EmbeddingClient {
  readonly id = "concept-embed";
  readonly provider = "test";
  readonly requests: (readonly string[])[] = [];
  /** Signals of requests that hung and were aborted; `listening` counts the ones still waiting. */
  aborted = 0;
  listening = 0;
  behaviour: "answer" | "throw" | "hang" = "answer";
  #started: (() => void)[] = [];

  constructor(readonly concepts: readonly (readonly string[])[] = DEFAULT_CONCEPTS) {}

  /** Resolves when the next request reaches the provider. */
  started(): Promise<void> {
    return new Promise((resolve) => this.#started.push(resolve));
  }

  vector(text: string): number[] {
    const words = memoryWords(text);
    return [
      ...this.concepts.map(
        (stems) => words.filter((w) => stems.some((s) => w.startsWith(s))).length,
      ),
      1,
    ];
  }

  async embed(request: EmbeddingRequest): Promise<EmbeddingResult> {
    this.requests.push([...request.texts]);
    for (const resolve of this.#started.splice(0)) resolve();
    if (this.behaviour === "throw") throw new Error("embedding provider unavailable");
    if (this.behaviour === "hang") {
      await new Promise<never>((_resolve, reject) => {
        this.listening += 1;
        const onAbort = () => {
          this.listening -= 1;
          this.aborted += 1;
          reject(request.signal.reason);
        };
        if (request.signal.aborted) onAbort();
        else request.signal.addEventListener("abort", onAbort, { once: true });
      });
    }
    const inputTokens = request.texts.reduce((n, t) => n + memoryWords(t).length, 0);
    return { vectors: request.texts.map((t) => this.vector(t)), usage: { inputTokens } };
  }
}

/** Concepts of the clinic tests: allergy, medication, food and drink, family, travel. */
export const DEFAULT_CONCEPTS: readonly (readonly string[])[] = Object.freeze([
  Object.freeze(["allerg", "reaction", "rash"]),
  Object.freeze(["medic", "penicillin", "drug", "antibiotic", "pill"]),
  Object.freeze(["coffee", "tea", "breakfast", "food"]),
  Object.freeze(["daughter", "son", "wife", "husband", "family"]),
  Object.freeze(["trip", "travel", "weekend", "holiday"]),
]);
