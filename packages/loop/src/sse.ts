import type { LoopEvent } from "./events.js";

export interface SseFrame {
  readonly event: string;
  readonly data: string;
}

/** Maps a loop event to an SSE frame: the event name is the type, the data one line of JSON. */
export function loopEventToSse(event: LoopEvent): SseFrame {
  // JSON.stringify escapes CR and LF inside strings, so the data is always one line.
  return { event: event.type, data: JSON.stringify(event) };
}

/** Serializes a frame to the wire; rejects CR/LF in the event name or id. */
export function formatSse(frame: SseFrame, id?: string): string {
  for (const field of [frame.event, id ?? ""]) {
    if (/[\r\n]/.test(field)) throw new TypeError("SSE fields may not contain CR or LF");
  }
  const lines = frame.data.split(/\r\n|\r|\n/).map((line) => `data: ${line}`);
  return `${id !== undefined ? `id: ${id}\n` : ""}event: ${frame.event}\n${lines.join("\n")}\n\n`;
}
