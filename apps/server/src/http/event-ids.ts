import { HttpError } from "./errors.js";

/**
 * A turn's SSE event ids: positions a reconnecting client hands back as `Last-Event-ID`, the same
 * on the first stream and on every replay.
 * - `<n>`: the text of step `n` (stored before it is shown, so it can be replayed);
 * - `<n>.<askId>`: a permission ask the turn parked on, after step `n`;
 * - `<n>.end`: the settled result, after step `n`.
 * Tool and usage events carry no id (they are not stored; a replay does not repeat them) and leave
 * the client's last id as it was.
 */
export type EventCursor =
  | { readonly step: number; readonly kind: "text" | "end" }
  | { readonly step: number; readonly kind: "ask"; readonly askId: string };

const ID = /^(\d{1,6})(?:\.(end|ask_[0-9a-f]{32}))?$/;

export const textId = (step: number): string => String(step);
export const askEventId = (step: number, askId: string): string => `${step}.${askId}`;
export const endId = (step: number): string => `${step}.end`;

/** The cursor a `Last-Event-ID` names (absent: from the start); anything else is a 422. */
export function readCursor(header: string | null): EventCursor {
  if (header === null || header === "") return { step: 0, kind: "text" };
  const m = ID.exec(header);
  if (!m)
    throw new HttpError(
      "invalid_input",
      "Last-Event-ID is not an id this host sent (a step number, <step>.<askId> or <step>.end)",
    );
  const step = Number(m[1]);
  const tail = m[2];
  if (tail === undefined) return { step, kind: "text" };
  if (tail === "end") return { step, kind: "end" };
  return { step, kind: "ask", askId: tail };
}
