import type { AlmaErrorCode } from "./error-codes.js";

/**
 * One small base class for every error Alma throws: a stable string `code` a host can switch on,
 * `retryable` fixed at construction (whether the same request, unchanged, may succeed later), and
 * the original `cause` kept. Outcomes a host acts on are data, not exceptions; these are for misuse
 * and for the uncertain.
 */
export class AlmaError<Code extends string = AlmaErrorCode> extends Error {
  /** Alma's own errors carry one of the closed `AlmaErrorCode` vocabulary (`vocabulary.ts`); a host's subclass names its own. */
  readonly code: Code;
  readonly retryable: boolean;

  constructor(code: Code, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** Raised by a constructor or normalizer for configuration or input that breaks a named rule. */
export class ValidationError extends AlmaError {
  readonly path: string;
  readonly rule: string;

  constructor(path: string, rule: string, message?: string) {
    super("invalid_input", message ?? `${path || "(root)"}: ${rule}`);
    this.path = path;
    this.rule = rule;
  }
}

export class InvalidScopeError extends AlmaError {
  constructor(message: string) {
    super("invalid_scope", message);
  }
}

export class InvalidIdError extends AlmaError {
  constructor(field: string, rule: string) {
    super("invalid_id", `${field}: ${rule}`);
  }
}
