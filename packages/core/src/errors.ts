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

/**
 * An optional peer dependency a part of Alma needs is not installed (`better-sqlite3` for the
 * SQLite store, `pg` for the PostgreSQL one): `packageName` names it, the message says what needs
 * it and how to install it. Raised when that part is first used, never when Alma is imported.
 */
export class MissingDependencyError extends AlmaError {
  readonly packageName: string;

  constructor(packageName: string, neededBy: string, cause?: unknown) {
    super(
      "missing_dependency",
      `${neededBy} needs the package ${packageName}, which is not installed: npm install ${packageName}`,
      { cause },
    );
    this.packageName = packageName;
  }
}

/**
 * `load(packageName)` (a `require` the caller made), with a missing package as a
 * `MissingDependencyError`; any other failure (a native module built for another Node) is
 * rethrown as it is.
 */
export function loadPeer<T>(
  packageName: string,
  neededBy: string,
  load: (name: string) => unknown,
): T {
  try {
    return load(packageName) as T;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const missing =
      (code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND") &&
      String((error as Error).message).includes(`'${packageName}'`);
    if (missing) throw new MissingDependencyError(packageName, neededBy, error);
    throw error;
  }
}
