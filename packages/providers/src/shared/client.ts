import {
  MODEL_SPECIFICATION_VERSION,
  type ModelRequest,
  type ModelStreamEvent,
  ProviderError,
  type UsageEvidence,
} from "@alma-harness/core";
import { abortedError, type ErrorFacts, tornError } from "./errors.js";
import { HttpRefusal, postJson, requestIdOf } from "./http.js";
import type { StreamTransform } from "./neutral.js";
import { readSse } from "./sse.js";
import type { FetchLike, ProviderClient, SingleDispatchStream } from "./types.js";

/** The request an adapter puts on the wire. */
export interface WireRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
}

/** What each adapter supplies; the transport, evidence and cancellation are shared. */
export interface AdapterSpec {
  readonly id: string;
  readonly provider: string;
  readonly fetch: FetchLike;
  readonly now: () => number;
  /** Response headers that carry the provider's request id, in preference order. */
  readonly requestIdHeaders: readonly string[];
  /** Throws `ProviderError` (`unsupported`) without I/O. */
  validate(request: ModelRequest): void;
  prepare(request: ModelRequest): WireRequest;
  transform(request: ModelRequest): StreamTransform;
  /** Classifies a failure once, HTTP or in-stream. */
  classify(facts: ErrorFacts): ProviderError;
}

interface Tracker {
  ref: string | undefined;
  settle(evidence: UsageEvidence): void;
}

const UNKNOWN: UsageEvidence = Object.freeze({ status: "unknown" });
const ZERO: UsageEvidence = Object.freeze({
  status: "known",
  usage: Object.freeze({ inputTokens: 0, outputTokens: 0 }),
});

/**
 * A refused request: a 4xx or 529 answer is the provider's own statement that it ran nothing, so
 * its usage is a known zero; any other 5xx may come from a proxy after work began: unknown.
 */
function refusalEvidence(error: ProviderError): UsageEvidence {
  const status = error.status ?? 0;
  return (status >= 400 && status < 500) || status === 529 ? ZERO : UNKNOWN;
}

async function* run(
  spec: AdapterSpec,
  request: ModelRequest,
  signal: AbortSignal,
  track: Tracker,
): AsyncGenerator<ModelStreamEvent> {
  if (signal.aborted) {
    track.settle({ status: "not_dispatched", cause: "aborted" });
    throw abortedError(spec.provider, signal);
  }
  let transform: StreamTransform;
  let wire: WireRequest;
  try {
    spec.validate(request);
    wire = spec.prepare(request);
    transform = spec.transform(request);
  } catch (error) {
    track.settle({ status: "not_dispatched", cause: "invalid" });
    throw error;
  }
  let response: Response;
  try {
    response = await postJson({
      ...wire,
      provider: spec.provider,
      fetch: spec.fetch,
      signal,
      now: spec.now,
      classify: spec.classify,
    });
  } catch (error) {
    if (error instanceof HttpRefusal) {
      track.settle(refusalEvidence(error.error));
      throw error.error;
    }
    track.settle(UNKNOWN);
    throw error;
  }
  track.ref = requestIdOf(response.headers, spec.requestIdHeaders);
  try {
    if (!response.body) throw tornError(spec.provider, "the response has no body");
    for await (const message of readSse(response.body, spec.provider)) {
      yield* transform.push(message);
      if (transform.done) {
        track.settle(transform.evidence());
        return;
      }
    }
    yield* transform.end();
    track.settle(transform.evidence());
  } catch (error) {
    if (signal.aborted) throw abortedError(spec.provider, signal, error);
    if (error instanceof ProviderError) {
      // An in-stream error may come with the counts already billed (the transform kept them).
      track.settle(transform.evidence());
      throw error;
    }
    throw tornError(spec.provider, "the body could not be read", error);
  } finally {
    // An early return() or a failure: billing is unresolved. A settled tracker ignores this.
    track.settle(UNKNOWN);
  }
}

function tracker(): Tracker & { promise: Promise<UsageEvidence> } {
  let resolve: (e: UsageEvidence) => void = () => undefined;
  let settled = false;
  const promise = new Promise<UsageEvidence>((r) => {
    resolve = r;
  });
  return {
    ref: undefined,
    promise,
    settle(evidence) {
      if (settled) return;
      settled = true;
      resolve(evidence);
    },
  };
}

/** Builds the `ModelClient` (and its single-dispatch face) from an adapter's parts. */
export function createProviderClient(spec: AdapterSpec): ProviderClient {
  return {
    specificationVersion: MODEL_SPECIFICATION_VERSION,
    id: spec.id,
    provider: spec.provider,
    validate: (request) => spec.validate(request),
    stream: (request, signal) =>
      run(spec, request, signal, { ref: undefined, settle: () => undefined }),
    streamEvidence(request, signal): SingleDispatchStream {
      const track = tracker();
      const generator = run(spec, request, signal, track);
      let started = false;
      let consumed = false;
      const iterator: AsyncIterator<ModelStreamEvent> = {
        next: () => {
          started = true;
          return generator.next();
        },
        return: async () => {
          if (!started) track.settle({ status: "not_dispatched" });
          const result = await generator.return(undefined);
          track.settle(UNKNOWN);
          return result;
        },
      };
      return {
        events: {
          [Symbol.asyncIterator]() {
            if (consumed) throw new TypeError("a single-dispatch stream may be consumed once");
            consumed = true;
            return iterator;
          },
        },
        evidence: track.promise,
        requestRef: () => track.ref,
      };
    },
  };
}
