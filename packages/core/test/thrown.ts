import { expect } from "vitest";
import { ValidationError } from "../src/index.js";

/** Runs `fn`, expects it to throw a `type`, and returns the error for further checks. */
export function thrown<E extends Error>(
  type: abstract new (...args: never[]) => E,
  fn: () => unknown,
): E {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(type);
    return error as E;
  }
  throw new Error(`expected a ${type.name}, nothing was thrown`);
}

/** Runs `fn`, expects a `ValidationError`, and returns it. */
export const validationError = (fn: () => unknown): ValidationError => thrown(ValidationError, fn);
