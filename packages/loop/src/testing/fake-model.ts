import {
  AlmaError,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  ProviderError,
  type StopReason,
  type StreamToolCall,
  type Usage,
  MODEL_SPECIFICATION_VERSION,
} from "@alma-harness/core";

/**
 * One scripted response: the events the fake streams for one call. `error` throws before the first
 * event (`at: 0`) or after `at` events; `torn` ends the stream without a terminal frame;
 * `hang` never yields the next event until the signal aborts (for deadlines and cancellation).
 */
export interface ScriptedResponse {
  readonly events: readonly ModelStreamEvent[];
  readonly error?: { readonly at: number; readonly error: Error };
  readonly hangAt?: number;
  /** Inspect the request before the fake answers (assertions, or a throw to simulate a refusal). */
  readonly expect?: (request: ModelRequest) => void;
}

const DEFAULT_USAGE: Usage = Object.freeze({ inputTokens: 10, outputTokens: 5 });

function completed(
  stopReason: StopReason,
  text: string,
  toolCalls: readonly StreamToolCall[],
  usage: Usage | undefined,
): ModelStreamEvent {
  return { type: "response_completed", stopReason, text, toolCalls, ...(usage ? { usage } : {}) };
}

function usageEvent(usage: Usage): ModelStreamEvent {
  return { type: "usage", evidence: { status: "known", usage } };
}

/** A text answer, streamed as one delta per chunk. */
export function scriptedText(
  text: string,
  opts: { usage?: Usage; chunks?: readonly string[]; stopReason?: StopReason } = {},
): ScriptedResponse {
  const usage = opts.usage ?? DEFAULT_USAGE;
  const chunks = opts.chunks ?? (text.length > 0 ? [text] : []);
  return {
    events: [
      ...chunks.map((t): ModelStreamEvent => ({ type: "text_delta", text: t })),
      usageEvent(usage),
      completed(opts.stopReason ?? "end_turn", text, [], usage),
    ],
  };
}

export interface ScriptedCall {
  readonly id?: string;
  readonly name: string;
  readonly input?: unknown;
  /** Raw argument text, to script arguments that do not parse. */
  readonly rawArguments?: string;
}

let autoId = 0;

/** One or more tool calls (optionally after some text), stop reason `tool_use`. */
export function scriptedToolCall(
  calls: ScriptedCall | readonly ScriptedCall[],
  opts: { text?: string; usage?: Usage } = {},
): ScriptedResponse {
  const list = Array.isArray(calls) ? (calls as readonly ScriptedCall[]) : [calls as ScriptedCall];
  const usage = opts.usage ?? DEFAULT_USAGE;
  const toolCalls: StreamToolCall[] = list.map((c) => ({
    id: c.id ?? `call_${++autoId}`,
    name: c.name,
    arguments: c.rawArguments ?? JSON.stringify(c.input ?? {}),
  }));
  const text = opts.text ?? "";
  return {
    events: [
      ...(text ? [{ type: "text_delta", text } as ModelStreamEvent] : []),
      ...toolCalls.map((c): ModelStreamEvent => ({ type: "tool_call", ...c })),
      usageEvent(usage),
      completed("tool_use", text, toolCalls, usage),
    ],
  };
}

/** Reasoning deltas (one burst) before the given response's events. */
export function scriptedReasoning(
  reasoning: string | readonly string[],
  then: ScriptedResponse,
  signature = "sig",
): ScriptedResponse {
  const parts = typeof reasoning === "string" ? [reasoning] : reasoning;
  const deltas = parts.map(
    (text, i): ModelStreamEvent => ({
      type: "reasoning_delta",
      text,
      ...(i === parts.length - 1 ? { signature } : {}),
    }),
  );
  return { ...then, events: [...deltas, ...then.events] };
}

/** Replaces the usage a response reports (in its usage event and terminal frame). */
export function scriptedUsage(usage: Usage, response: ScriptedResponse): ScriptedResponse {
  return {
    ...response,
    events: response.events.map((e) => {
      if (e.type === "usage") return usageEvent(usage);
      if (e.type === "response_completed") return { ...e, usage };
      return e;
    }),
  };
}

/** A `ProviderError` thrown before the stream (`at: 0`, the default) or after `at` events of `partial`. */
export function scriptedError(
  error: ProviderError | Error,
  opts: { at?: number; partial?: ScriptedResponse } = {},
): ScriptedResponse {
  return { events: opts.partial?.events ?? [], error: { at: opts.at ?? 0, error } };
}

/** A torn stream: the events of `response` without its terminal frame. */
export function scriptedTorn(response: ScriptedResponse): ScriptedResponse {
  return { events: response.events.filter((e) => e.type !== "response_completed") };
}

/** A stream that yields `at` events then waits until the call's signal aborts. */
export function scriptedHang(
  response: ScriptedResponse = { events: [] },
  at = 0,
): ScriptedResponse {
  return { ...response, hangAt: at };
}

/** Raw events, for stream-integrity cases the helpers cannot express. */
export function scriptedEvents(events: readonly ModelStreamEvent[]): ScriptedResponse {
  return { events };
}

export class UnexpectedModelCallError extends AlmaError {
  constructor(index: number) {
    super("unexpected_model_call", `FakeModelClient: call #${index + 1} was not scripted`);
  }
}

/**
 * The scripted model every engine test drives. Deterministic: no timers, no network. It records
 * every request it receives (`requests`) and fails loudly on a call beyond its script; `pending`
 * says how many scripted responses were never consumed.
 */
export class FakeModelClient implements ModelClient {
  readonly specificationVersion = MODEL_SPECIFICATION_VERSION;
  readonly id: string;
  /** `fake` unless given: a test of provider-bound proofs names `anthropic` or `openai`. */
  readonly provider: string;
  readonly requests: ModelRequest[] = [];
  /**
   * How many streams the consumer closed with `return()` before pulling them to their end, for
   * cleanup assertions. The engine closes every stream it stops pulling: after a violation, an
   * abort, and after the first terminal frame (it never pulls past it).
   */
  closed = 0;
  private readonly script: ScriptedResponse[];
  private readonly validator: ((request: ModelRequest) => void) | undefined;

  constructor(
    script: readonly ScriptedResponse[] = [],
    opts: { id?: string; provider?: string; validate?: (request: ModelRequest) => void } = {},
  ) {
    this.script = [...script];
    this.id = opts.id ?? "fake";
    this.provider = opts.provider ?? "fake";
    this.validator = opts.validate;
  }

  /** Appends more scripted responses. */
  push(...responses: ScriptedResponse[]): this {
    this.script.push(...responses);
    return this;
  }

  get pending(): number {
    return this.script.length;
  }

  get calls(): number {
    return this.requests.length;
  }

  validate(request: ModelRequest): void {
    this.validator?.(request);
  }

  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    const index = this.requests.length;
    this.requests.push(request);
    const response = this.script.shift();
    return {
      [Symbol.asyncIterator]: () => this.iterate(index, response, request, signal),
    };
  }

  private iterate(
    index: number,
    response: ScriptedResponse | undefined,
    request: ModelRequest,
    signal: AbortSignal,
  ): AsyncIterator<ModelStreamEvent> {
    let at = 0;
    let done = false;
    const finish = (): IteratorResult<ModelStreamEvent> => {
      done = true;
      return { done: true, value: undefined };
    };
    return {
      next: async () => {
        if (done) return { done: true, value: undefined };
        if (!response) throw new UnexpectedModelCallError(index);
        if (at === 0) response.expect?.(request);
        if (signal.aborted) throw abortError(signal);
        if (response.error && response.error.at === at) {
          done = true;
          throw response.error.error;
        }
        if (response.hangAt === at) await waitForAbort(signal);
        const event = response.events[at];
        at += 1;
        return event === undefined ? finish() : { done: false, value: event };
      },
      return: async () => {
        if (!done) this.closed += 1;
        return finish();
      },
    };
  }
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error
    ? signal.reason
    : new ProviderError("the call was cancelled", { kind: "cancelled", provider: "fake" });
}

function waitForAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) return reject(abortError(signal));
    signal.addEventListener("abort", () => reject(abortError(signal)), { once: true });
  });
}

/**
 * A model that answers every call with the same text, however many calls come (a scheduler's runs,
 * several processes' turns), and counts them in `calls`. For a fixed script that fails past its
 * end, use `FakeModelClient`.
 */
export function repeatingTextModel(text: string): ModelClient & { readonly calls: number } {
  let calls = 0;
  return {
    id: "fake",
    provider: "fake",
    validate: () => undefined,
    get calls() {
      return calls;
    },
    async *stream(): AsyncIterable<ModelStreamEvent> {
      calls += 1;
      for (const event of scriptedText(text).events) yield event;
    },
  };
}
