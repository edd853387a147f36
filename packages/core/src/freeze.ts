/**
 * Freezes a value and everything reachable from it, in place, and returns it. An object that is
 * already frozen is taken as frozen all the way down and not visited again, so pass data built
 * fresh (parsed, cloned, assembled) or frozen by this function. It checks nothing and copies
 * nothing: untrusted input goes through `snapshot`, which does both.
 */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
