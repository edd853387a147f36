/**
 * The embedding seam (issue 18 §2): an optional provider of vectors for hosts that want semantic
 * ranking of recall. Alma never calls it directly: `semanticRecall` in `@alma-harness/memory`
 * routes every embedding through the governed call (priced, journaled before egress, settled once,
 * on the trails), so an embedding is spend like any model call.
 */
export interface EmbeddingRequest {
  /** The texts to embed, in order (each one vector back, in the same order). */
  readonly texts: readonly string[];
  /** Aborts the embedding: the recall's deadline or cancellation. */
  readonly signal: AbortSignal;
}

export interface EmbeddingResult {
  /** One vector per text, in order, all of one dimension, finite numbers. */
  readonly vectors: readonly (readonly number[])[];
  /** The provider's own count: what the embedding is priced by (input tokens at the model's input rate). */
  readonly usage: { readonly inputTokens: number };
}

export interface EmbeddingClient {
  /** Names the client on the trails and in the journal (an id). */
  readonly id: string;
  /** The provider (an id): the routing trail's `provider`. */
  readonly provider: string;
  embed(request: EmbeddingRequest): Promise<EmbeddingResult>;
}
