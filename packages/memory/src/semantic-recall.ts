import {
  type EmbeddingClient,
  type Episode,
  type EpisodeStore,
  type ModelChoice,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  type ProfileFact,
  type ProfileStore,
  type RecallQuery,
  type RecallResult,
  type RecallSource,
  sessionPseudonym,
  type Tier,
  type TrailKey,
  type TrailKeyMaterial,
  trailKey,
  ValidationError,
} from "@alma-harness/core";
import type { GovernedCalls } from "@alma-harness/execution";
import { storeRecall } from "./recall-source.js";

/**
 * How one semantic recall ranked (closed; the host reads it through `onRanking`):
 * - `semantic`: the embedding settled and the candidates were re-ranked by cosine similarity;
 * - `lexical_unpriced`: the price table has no row for the embedding model: no call, lexical order;
 * - `lexical_refused`: a block cap refused the embedding's worst case at zero cost: lexical order;
 * - `lexical_failed`: the embedding failed, timed out, was cancelled or answered off its shape: lexical order;
 * - `lexical_only`: nothing to rank (no candidate, or a query with no text): no call, lexical order.
 */
export type SemanticRanking =
  | "semantic"
  | "lexical_unpriced"
  | "lexical_refused"
  | "lexical_failed"
  | "lexical_only";

export interface SemanticRecallOptions {
  readonly stores: { readonly episodes: EpisodeStore; readonly profiles: ProfileStore };
  readonly embedding: EmbeddingClient;
  /** The host's governed calls, built over the runtime's own stores (journal, settlements, spend, audit) and price table. */
  readonly calls: GovernedCalls;
  /** The embedding model: priced by the calls' price table (its input rate prices the input tokens). */
  readonly model: string;
  /** The runtime's trail key: the call's trail records carry the session's pseudonym. */
  readonly trailKey: TrailKey | TrailKeyMaterial;
  /** The route's tier on the routing trail; default `fast`. */
  readonly tier?: Tier;
  /** Lexical candidates per kind to re-rank, 1–50; default 20 (never fewer than the asked bound). */
  readonly candidates?: number;
  /** The embedding's own round deadline, 1 ms–10 min; default 10 s (the recall's signal bounds it too). */
  readonly roundTimeoutMs?: number;
  /** The source's name on the recall trail; default `memory.semantic`. */
  readonly name?: string;
  /** Told how each recall ranked. A throw is swallowed: it never changes the recall. */
  readonly onRanking?: (ranking: SemanticRanking) => void;
}

interface Candidates {
  /** By words (the lexical order), then recent episodes the words missed. */
  readonly episodes: readonly Episode[];
  /** How many of `episodes` the words found (the lexical answer is their first bound). */
  readonly episodesByWords: number;
  readonly facts: readonly ProfileFact[];
}

/**
 * A `RecallSource` that re-ranks the memory stores' lexical candidates by embedding similarity.
 * The candidates come from the stores only (asked scope, at or below the ceiling, current facts):
 * the re-ranking reorders and cuts them, it never adds a record. The embedding is one governed
 * call (`GovernedCalls.run`, kind `single` with its own operation: priced, claimed before egress,
 * settled once, on the routing, access and cost trails); anything short of a settled call answers
 * the lexical order.
 */
export function semanticRecall(options: SemanticRecallOptions): RecallSource {
  const config = compile(options);
  const lexical = storeRecall(options.stores);
  return {
    name: config.name,
    async recall(query: RecallQuery): Promise<RecallResult> {
      const found = await candidatesOf(lexical, options.stores.episodes, query, config.candidates);
      const fallback = lexicalAnswer(found, query);
      const texts = [
        query.text,
        ...found.episodes.map((e) => e.summary),
        ...found.facts.map((f) => f.text),
      ];
      if (query.text.trim() === "" || texts.length === 1)
        return tell(config, "lexical_only", fallback);
      const embedded = await embedGoverned(config, query, texts);
      if (embedded.status !== "semantic") return tell(config, embedded.status, fallback);
      const [q, ...rest] = embedded.vectors;
      // A recent episode the words missed is recalled only when it is similar at all (words found none of it).
      const episodes = ranked(
        found.episodes,
        rest.slice(0, found.episodes.length),
        q as readonly number[],
        query.limits.episodes,
        found.episodesByWords,
      );
      const facts = ranked(
        found.facts,
        rest.slice(found.episodes.length),
        q as readonly number[],
        query.limits.facts,
        found.facts.length,
      );
      return tell(
        config,
        "semantic",
        Object.freeze({ episodes: Object.freeze(episodes), facts: Object.freeze(facts) }),
      );
    },
  };
}

interface Compiled
  extends Required<Omit<SemanticRecallOptions, "onRanking" | "stores" | "trailKey">> {
  readonly key: TrailKey;
  readonly onRanking: SemanticRecallOptions["onRanking"];
}

function compile(options: SemanticRecallOptions): Compiled {
  if (options === null || typeof options !== "object")
    throw new ValidationError("semanticRecall", "closed", "semanticRecall needs its options");
  const { embedding, calls } = options;
  if (
    !embedding ||
    typeof embedding.embed !== "function" ||
    typeof embedding.id !== "string" ||
    typeof embedding.provider !== "string"
  ) {
    throw new ValidationError(
      "semanticRecall.embedding",
      "closed",
      "embedding must be an EmbeddingClient (id, provider, embed)",
    );
  }
  if (!calls || typeof calls.run !== "function" || typeof calls.account !== "function")
    throw new ValidationError("semanticRecall.calls", "closed", "calls must be a GovernedCalls");
  if (
    !options.stores ||
    typeof options.stores.episodes?.search !== "function" ||
    typeof options.stores.profiles?.search !== "function"
  ) {
    throw new ValidationError(
      "semanticRecall.stores",
      "closed",
      "stores must hold the episode and profile stores",
    );
  }
  if (typeof options.model !== "string" || options.model.length < 1 || options.model.length > 128)
    throw new ValidationError("semanticRecall.model", "length", "model must be 1-128 characters");
  const candidates = options.candidates ?? 20;
  if (!Number.isSafeInteger(candidates) || candidates < 1 || candidates > 50)
    throw new ValidationError(
      "semanticRecall.candidates",
      "range",
      "candidates must be an integer 1-50",
    );
  const roundTimeoutMs = options.roundTimeoutMs ?? 10_000;
  if (!Number.isSafeInteger(roundTimeoutMs) || roundTimeoutMs < 1 || roundTimeoutMs > 600_000)
    throw new ValidationError(
      "semanticRecall.roundTimeoutMs",
      "range",
      "roundTimeoutMs must be an integer 1-600,000",
    );
  const tier = options.tier ?? "fast";
  if (tier !== "fast" && tier !== "balanced" && tier !== "deep")
    throw new ValidationError(
      "semanticRecall.tier",
      "closed",
      "tier must be fast, balanced or deep",
    );
  const name = options.name ?? "memory.semantic";
  if (typeof name !== "string" || !/^[a-z0-9_.:-]{1,64}$/.test(name))
    throw new ValidationError(
      "semanticRecall.name",
      "pattern",
      "name must be 1-64 of [a-z0-9_.:-]",
    );
  if (options.onRanking !== undefined && typeof options.onRanking !== "function")
    throw new ValidationError("semanticRecall.onRanking", "closed", "onRanking must be a function");
  return Object.freeze({
    embedding,
    calls,
    model: options.model,
    key: trailKey(options.trailKey),
    tier,
    candidates,
    roundTimeoutMs,
    name,
    onRanking: options.onRanking,
  });
}

/** The stores' own lexical answer at the wider bound (facts topped up by recency), plus recent episodes the words missed. */
async function candidatesOf(
  lexical: RecallSource,
  episodes: EpisodeStore,
  query: RecallQuery,
  wide: number,
): Promise<Candidates> {
  const e = query.limits.episodes > 0 ? Math.max(wide, query.limits.episodes) : 0;
  const f = query.limits.facts > 0 ? Math.max(wide, query.limits.facts) : 0;
  const [byWords, recent] = await Promise.all([
    lexical.recall({ ...query, limits: { episodes: e, facts: f } }),
    e > 0 && query.text.trim() !== ""
      ? episodes.search(query.scope, { text: " ", ceiling: query.ceiling, limit: e })
      : [],
  ]);
  const seen = new Set(byWords.episodes.map((x) => x.episodeId));
  const extra = recent.map((h) => h.record).filter((x) => !seen.has(x.episodeId));
  return {
    episodes: [...byWords.episodes, ...extra].slice(0, e),
    episodesByWords: byWords.episodes.length,
    facts: byWords.facts,
  };
}

/** What `storeRecall` answers at the asked bounds: the first episodes the words found, the first facts. */
function lexicalAnswer(found: Candidates, query: RecallQuery): RecallResult {
  return Object.freeze({
    episodes: Object.freeze(
      found.episodes.slice(0, Math.min(found.episodesByWords, query.limits.episodes)),
    ),
    facts: Object.freeze(found.facts.slice(0, query.limits.facts)),
  });
}

function tell(config: Compiled, ranking: SemanticRanking, result: RecallResult): RecallResult {
  try {
    config.onRanking?.(ranking);
  } catch {
    // The host's observer never changes the recall.
  }
  return result;
}

/** The candidates by cosine similarity to the query, ties in the lexical order, at most `limit`; those from `kept` on only when similar (> 0). */
function ranked<T>(
  records: readonly T[],
  vectors: readonly (readonly number[])[],
  query: readonly number[],
  limit: number,
  kept: number,
): T[] {
  return records
    .map((record, i) => ({ record, i, score: cosine(query, vectors[i] as readonly number[]) }))
    .filter((x) => x.i < kept || x.score > 0)
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, limit)
    .map((x) => x.record);
}

export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

type Embedded =
  | { readonly status: "semantic"; readonly vectors: readonly (readonly number[])[] }
  | { readonly status: Exclude<SemanticRanking, "semantic" | "lexical_only"> };

/** The embedding as one governed call: its own operation (kind `single`), a fresh account, the recall's signal. */
async function embedGoverned(
  config: Compiled,
  query: RecallQuery,
  texts: readonly string[],
): Promise<Embedded> {
  const request = embeddingRequest(config.model, texts);
  const choice: ModelChoice = {
    clientId: config.embedding.id,
    model: config.model,
    maxOutputTokens: request.maxOutputTokens,
    cache: false,
  };
  const id = `recall_${globalThis.crypto.randomUUID().replaceAll("-", "")}`;
  const box: { vectors?: readonly (readonly number[])[] } = {};
  try {
    const outcome = await config.calls.run(
      {
        scope: query.scope,
        sessionId: query.sessionId,
        trailSession: sessionPseudonym(config.key, query.scope, query.sessionId),
        rootKey: id,
        turnId: id,
        operationId: `${id}:embed`,
        kind: "single",
        operation: { operationId: id, attemptId: `${id}:a1` },
      },
      embeddingModelClient(config.embedding, texts.length, box),
      choice,
      request,
      {
        account: config.calls.account(),
        signal: query.signal,
        roundTimeoutMs: config.roundTimeoutMs,
        route: { tier: config.tier, sensitivity: query.ceiling },
        seenCallIds: new Set(),
      },
    );
    if (outcome.status === "refused")
      return { status: outcome.reason === "unpriced" ? "lexical_unpriced" : "lexical_refused" };
    if (outcome.status !== "settled" || box.vectors === undefined)
      return { status: "lexical_failed" };
    return { status: "semantic", vectors: box.vectors };
  } catch {
    // Uncertain (failed, cut, cancelled, a store fault): the journal keeps it; recall goes on lexically.
    return { status: "lexical_failed" };
  }
}

/**
 * The request the governed call prices and journals: one person's message whose text blocks are the
 * texts to embed (the query first), one output token (an embedding answers none; the worst case
 * counts it at the model's output rate, which an embedding row sets to 0).
 */
export function embeddingRequest(model: string, texts: readonly string[]): ModelRequest {
  return {
    model,
    system: [],
    messages: [{ role: "user", blocks: texts.map((text) => ({ type: "text" as const, text })) }],
    tools: [],
    maxOutputTokens: 1,
  };
}

/**
 * The embedding presented as a `ModelClient`: its stream embeds the request's texts under the
 * call's signal, hands the vectors to `box` and carries the provider's usage as the call's evidence
 * (known input tokens, no output), so execution prices and settles it by its own rule.
 */
function embeddingModelClient(
  embedding: EmbeddingClient,
  count: number,
  box: { vectors?: readonly (readonly number[])[] },
): ModelClient {
  return {
    id: embedding.id,
    provider: embedding.provider,
    validate: () => {},
    stream: (request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> =>
      (async function* () {
        const texts = (request.messages[0]?.blocks ?? []).map((b) =>
          b.type === "text" ? b.text : "",
        );
        const result = await embedding.embed({ texts, signal });
        const vectors = checkedVectors(result?.vectors, count);
        const inputTokens = result?.usage?.inputTokens;
        if (!Number.isSafeInteger(inputTokens) || (inputTokens as number) < 0)
          throw new ValidationError(
            "embedding.usage",
            "range",
            "the embedding's input tokens must be a non-negative integer",
          );
        box.vectors = vectors;
        const usage = { inputTokens: inputTokens as number, outputTokens: 0 };
        yield { type: "usage", evidence: { status: "known", usage } };
        yield {
          type: "response_completed",
          stopReason: "end_turn",
          text: "",
          toolCalls: [],
          usage,
        };
      })(),
  };
}

function checkedVectors(vectors: unknown, count: number): readonly (readonly number[])[] {
  if (!Array.isArray(vectors) || vectors.length !== count)
    throw new ValidationError(
      "embedding.vectors",
      "length",
      "the embedding must answer one vector per text",
    );
  const dimension = Array.isArray(vectors[0]) ? vectors[0].length : 0;
  if (dimension < 1 || dimension > 65_536)
    throw new ValidationError(
      "embedding.vectors",
      "range",
      "a vector must have 1-65,536 dimensions",
    );
  for (const v of vectors) {
    if (
      !Array.isArray(v) ||
      v.length !== dimension ||
      !v.every((x) => typeof x === "number" && Number.isFinite(x))
    ) {
      throw new ValidationError(
        "embedding.vectors",
        "closed",
        "every vector must hold finite numbers of one dimension",
      );
    }
  }
  return Object.freeze(vectors.map((v) => Object.freeze([...v])));
}
