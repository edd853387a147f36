import { pgDriver } from "./driver.js";

/** A value as an SQL literal, or undefined when it has no safe one (the statement is then sent with its parameters). */
function literal(value: unknown): string | undefined {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "string") return pgDriver().escapeLiteral(value);
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  if (typeof value === "number") return Number.isSafeInteger(value) ? `(${value})` : undefined;
  if (Array.isArray(value) && value.every((e) => e === null || typeof e === "string")) {
    const items = value.map((e) =>
      e === null ? "NULL" : `"${(e as string).replace(/[\\"]/g, "\\$&")}"`,
    );
    return pgDriver().escapeLiteral(`{${items.join(",")}}`);
  }
  return undefined;
}

/**
 * `text` with its `$n` parameters replaced by literals, so that it can share one simple-protocol
 * round trip with the savepoint before it; undefined when a value has no safe literal. The SQL
 * texts of this package have no `$` but their parameters (no dollar quoting, none in literals).
 */
export function inline(text: string, values: readonly unknown[]): string | undefined {
  const literals = values.map(literal);
  if (literals.some((l) => l === undefined)) return undefined;
  let missing = false;
  const out = text.replace(/\$(\d+)/g, (_, n: string) => {
    const l = literals[Number(n) - 1];
    if (l === undefined) missing = true;
    return l ?? "";
  });
  return missing ? undefined : out;
}
