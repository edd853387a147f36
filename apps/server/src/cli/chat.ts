import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { CliError, flag, type ParsedArgs } from "./args.js";
import { api, baseUrl, type CliIo, failOn, tenantToken, write } from "./context.js";
import { readSseEvents } from "../sse-events.js";

export const CHAT_HELP = `alma chat: chat with the clinic agent of a running host, as a patient.

Usage: alma chat [--url URL] [--token JWT | --org ORG --uid UID] [--session ID]

Reads one message per line from stdin (a prompt on a terminal); step text streams in as each
step settles, with a spinner while a step runs. Ctrl-D (end of input) quits.
  --url      the host (default $ALMA_URL or http://127.0.0.1:8787)
  --token    a tenant token (default $ALMA_TOKEN, else one minted with this machine's dev secret)
  --org      tenant for a minted token (default sunrise-clinic)
  --uid      patient for a minted token (default p-1001)
  --session  the session id (default a new one)`;

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** A spinner on a terminal's stderr while a step runs; silent when stderr is not a terminal. */
function spinner(stream: CliIo["stderr"]): { start(): void; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let frame = 0;
  return {
    start() {
      if (!stream.isTTY || timer) return;
      timer = setInterval(() => {
        stream.write(`\r${FRAMES[frame % FRAMES.length]} thinking…`);
        frame += 1;
      }, 80);
    },
    stop() {
      if (!timer) return;
      clearInterval(timer);
      timer = undefined;
      stream.write("\r\x1b[K");
    },
  };
}

interface ResultData {
  readonly status?: string;
  readonly text?: string;
  readonly delivered?: readonly string[];
  readonly notice?: string;
  readonly rootKey?: string;
}

/** What one stream connection came to: its result (none when it broke first), the last event id. */
interface Read {
  readonly result: ResultData | undefined;
  readonly lastId: string | undefined;
}

/** Prints one connection's events; a connection that breaks ends the read without a result. */
async function readStream(
  io: CliIo,
  body: ReadableStream<Uint8Array>,
  shown: { last: string },
): Promise<Read> {
  const spin = spinner(io.stderr);
  let lastId: string | undefined;
  let result: ResultData | undefined;
  spin.start();
  try {
    for await (const event of readSseEvents(body)) {
      spin.stop();
      lastId = event.id ?? lastId;
      const data = JSON.parse(event.data) as Record<string, unknown>;
      if (event.event === "text") {
        shown.last = String(data.text ?? "");
        write(io.stdout, `assistant> ${shown.last}`);
      } else if (event.event === "permission") write(io.stdout, permissionLine(data));
      else if (event.event === "error") {
        const error = data.error as { code?: string; message?: string } | undefined;
        throw new CliError(`${error?.code}: ${error?.message} (HTTP ${String(data.status)})`);
      } else if (event.event === "result") {
        result = data as ResultData;
        break;
      }
      spin.start();
    }
  } catch (error) {
    if (error instanceof CliError) throw error;
    // The connection broke: the caller reads on from the last id.
  } finally {
    spin.stop();
  }
  return { result, lastId };
}

function permissionLine(data: Record<string, unknown>): string {
  const state = String(data.state);
  return state === "pending"
    ? `  [waiting for the clinic to approve ${String(data.subject ?? data.tool)}]`
    : `  [the clinic ${state === "approved" ? "approved" : state === "denied" ? "denied" : "did not answer"} it]`;
}

/** How many times in a row a lost stream is reconnected before giving up. */
const RECONNECTS = 30;

/**
 * Reads on from the last event id (`GET` the turn's stream with `Last-Event-ID`) until the turn
 * settles: after a dropped connection, a restart of the host, or a park (the host keeps that
 * stream open until a decision moves the turn).
 */
async function readOn(
  io: CliIo,
  url: string,
  token: string,
  first: Read,
  shown: { last: string },
): Promise<ResultData> {
  let read = first;
  let failures = 0;
  const unsettled = (r: Read) =>
    !r.result || r.result.status === "awaiting_approval" || r.result.status === "in_progress";
  let wasParked = read.result?.status === "awaiting_approval";
  while (unsettled(read)) {
    const response = await fetch(url, {
      headers: {
        authorization: `Bearer ${token}`,
        accept: "text/event-stream",
        ...(read.lastId ? { "last-event-id": read.lastId } : {}),
      },
    }).catch(() => undefined);
    if (!response?.ok || !response.body) {
      if (response && response.status < 500) await failOn(response);
      failures += 1;
      if (failures > RECONNECTS) throw new CliError("lost the host; the turn is kept there");
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      continue;
    }
    failures = 0;
    const next = await readStream(io, response.body, shown);
    if (wasParked && next.result && next.result.status !== "awaiting_approval") {
      write(io.stdout, "  [the clinic decided; the assistant goes on]");
      wasParked = false;
    }
    read = { result: next.result, lastId: next.lastId ?? read.lastId };
  }
  return read.result as ResultData;
}

/** Sends one message over SSE and prints what arrives, reading on when the stream is lost or parks. */
async function sendOne(
  io: CliIo,
  base: string,
  token: string,
  sessionId: string,
  text: string,
): Promise<ResultData | undefined> {
  const response = await fetch(`${base}/v1/sessions/${encodeURIComponent(sessionId)}/turns`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "text/event-stream",
      "idempotency-key": `cli-${randomUUID()}`,
    },
    body: JSON.stringify({ input: text }),
  }).catch((error: Error) => {
    throw new CliError(
      `cannot reach the host at ${base} (${error.message}); is it running? (npm start)`,
    );
  });
  await failOn(response);
  if (!response.body) throw new CliError("the host sent no stream");
  const shown = { last: "" };
  const first = await readStream(io, response.body, shown);
  const location = response.headers.get("location");
  const result = location
    ? await readOn(io, `${base}${location}`, token, first, shown)
    : first.result;
  if (!result) throw new CliError("the stream ended without a result");
  if (result.text && result.text !== shown.last) write(io.stdout, `assistant> ${result.text}`);
  for (const message of result.delivered ?? []) write(io.stdout, `  [sent to you] ${message}`);
  if (result.notice) write(io.stdout, `  [notice] ${result.notice}`);
  return result;
}

export async function chatCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const base = baseUrl(args, io);
  const { token } = await tenantToken(args, io);
  const sessionId = flag(args, "session") ?? `cli-${randomUUID().slice(0, 8)}`;
  const me = await api<{ org: string; uid: string; clinic?: string; patient: string | null }>(
    base,
    "/v1/me",
    { token },
  );
  const info = await fetch(`${base}/v1/info`).then(
    (r) => r.json() as Promise<{ offlineDemo?: boolean; model?: string }>,
  );
  const model = info.offlineDemo ? "offline demo model (scripted, not an AI)" : info.model;
  write(
    io.stdout,
    `alma chat · ${me.body.clinic ?? me.body.org} · ${me.body.uid}${me.body.patient ? ` (${me.body.patient})` : ""} · session ${sessionId} · ${model}`,
  );
  const terminal = io.stdin.isTTY === true && io.stdout.isTTY === true;
  if (terminal) write(io.stdout, "Type a message; Ctrl-D quits.");
  const lines = createInterface({
    input: io.stdin,
    ...(terminal ? { output: io.stdout, prompt: "you> " } : {}),
    terminal,
  });
  if (terminal) lines.prompt();
  try {
    for await (const line of lines) {
      const text = line.trim();
      if (text) {
        if (!terminal) write(io.stdout, `you> ${text}`);
        await sendOne(io, base, token, sessionId, text);
      }
      if (terminal) lines.prompt();
    }
  } finally {
    lines.close();
  }
  return 0;
}
