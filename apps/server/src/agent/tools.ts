import {
  defineTool,
  type Scope,
  type ToolContext,
  type ToolDefinition,
  toolError,
} from "@alma-harness/core";
import type { Appointment, ClinicDesk, DeskResult } from "./clinics.js";

/** Who a turn is for: the host's answer, from the scope it derived from a verified token. */
export type OwnerOf = (
  turnId: string,
) => { readonly scope: Scope; readonly sessionId: string } | undefined;

export const BOOK_TOOL = "book_appointment";
export const SEND_TOOL = "send_message";

/**
 * Tools never see the scope (Alma passes the turn id, not the tenant). A turn this process does not
 * know is a host fault, so the handler throws and the turn ends uncertain instead of guessing.
 */
function ownerOf(owner: OwnerOf, ctx: ToolContext): Scope {
  const found = owner(ctx.turnId);
  if (!found) throw new Error("the host does not know this turn's tenant");
  return found.scope;
}

const DAY = {
  type: "string",
  description: "today, tomorrow, a weekday name (monday…) or YYYY-MM-DD",
  maxLength: 20,
} as const;

/**
 * The clinic front desk's tools. Reads are allowed; booking asks the operator (the permission
 * desk decides); reading a record is confidential and declares its resource for the access trail;
 * `send_message` is the terminal tool that delivers the reply through the clinic's channel.
 */
export function clinicTools(desk: ClinicDesk, owner: OwnerOf): ToolDefinition[] {
  return [
    hoursTool(desk, owner),
    slotsTool(desk, owner),
    bookTool(desk, owner),
    cancelTool(desk, owner),
    recordTool(desk, owner),
    sendTool(desk, owner),
  ];
}

function hoursTool(desk: ClinicDesk, owner: OwnerOf): ToolDefinition {
  return defineTool({
    name: "opening_hours",
    // A read: running it again after a crash changes nothing.
    replaySafe: true,
    description: "Opening hours of the clinic on a day.",
    input: {
      type: "object",
      properties: { day: DAY },
      required: ["day"],
      additionalProperties: false,
    },
    handler: (input, ctx) => {
      const scope = ownerOf(owner, ctx);
      const day = desk.resolveDay(input.day as string);
      if (!day) return toolError({ error: "unknown day", day: input.day as string });
      return { clinic: desk.clinic(scope.org)?.name ?? scope.org, ...desk.hours(scope.org, day) };
    },
  });
}

function slotsTool(desk: ClinicDesk, owner: OwnerOf): ToolDefinition {
  return defineTool({
    name: "find_free_slots",
    // A read: running it again after a crash changes nothing.
    replaySafe: true,
    description:
      "Free appointment slots from a day on (five days ahead). Slot ids look like 2026-11-03T09:00.",
    input: { type: "object", properties: { day: DAY }, additionalProperties: false },
    handler: (input, ctx) => {
      const scope = ownerOf(owner, ctx);
      const day = desk.resolveDay(input.day as string | undefined);
      if (!day) return toolError({ error: "unknown day", day: input.day as string });
      return { from: day, slots: desk.freeSlots(scope.org, day) };
    },
  });
}

function bookTool(desk: ClinicDesk, owner: OwnerOf): ToolDefinition {
  return defineTool({
    name: BOOK_TOOL,
    description:
      "Books a free slot for the person. The clinic approves each booking before it is made.",
    input: {
      type: "object",
      properties: { slotId: { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}$" } },
      required: ["slotId"],
      additionalProperties: false,
    },
    authorize: (input) => ({ action: "book", subject: `slot:${input.slotId as string}` }),
    // A slot id is the clinic's own calendar key (a date and time, pattern-checked), not personal data: the trail keeps it.
    nonSensitiveTrail: true,
    handler: (input, ctx) => {
      const scope = ownerOf(owner, ctx);
      const result = desk.book(
        scope.org,
        scope.uid,
        input.slotId as string,
        `${ctx.turnId}:${ctx.callId}`,
      );
      return appointmentAnswer(result);
    },
  });
}

function cancelTool(desk: ClinicDesk, owner: OwnerOf): ToolDefinition {
  return defineTool({
    name: "cancel_appointment",
    description: "Cancels one of the person's own appointments.",
    input: {
      type: "object",
      properties: { appointmentId: { type: "string", maxLength: 40 } },
      required: ["appointmentId"],
      additionalProperties: false,
    },
    authorize: (input) => ({
      action: "cancel",
      subject: `appointment:${input.appointmentId as string}`,
    }),
    handler: (input, ctx) => {
      const scope = ownerOf(owner, ctx);
      const result = desk.cancel(scope.org, scope.uid, input.appointmentId as string);
      return appointmentAnswer(result);
    },
  });
}

function recordTool(desk: ClinicDesk, owner: OwnerOf): ToolDefinition {
  return defineTool({
    name: "read_patient_record",
    // A read: running it again after a crash changes nothing.
    replaySafe: true,
    description:
      "Reads the person's own patient record (confidential): allergies, notes and appointments.",
    input: {
      type: "object",
      properties: { patientId: { type: "string", maxLength: 40 } },
      required: ["patientId"],
      additionalProperties: false,
    },
    authorize: (input) => ({
      action: "read_record",
      subject: `patient:${input.patientId as string}`,
    }),
    access: (input) => ({ resource: `patients/${input.patientId as string}` }),
    handler: (input, ctx) => {
      const scope = ownerOf(owner, ctx);
      // The identity comes from the token, never from the model's argument.
      if (input.patientId !== scope.uid)
        return toolError({ error: "a person may read only their own record" });
      const patient = desk.patient(scope.org, scope.uid);
      if (!patient) return toolError({ error: "no record on file" });
      const appointments = desk
        .appointmentsOf(scope.org, scope.uid)
        .map((a) => ({ id: a.id, slotId: a.slotId, status: a.status }));
      return {
        patientId: patient.id,
        name: patient.name,
        born: patient.born,
        allergies: [...patient.allergies],
        notes: patient.notes,
        appointments,
      };
    },
  });
}

function sendTool(desk: ClinicDesk, owner: OwnerOf): ToolDefinition {
  return defineTool({
    name: SEND_TOOL,
    description:
      "Sends the person a message through the clinic's channel (a confirmation or a summary). Ends your turn.",
    input: {
      type: "object",
      properties: { text: { type: "string", minLength: 1, maxLength: 1000 } },
      required: ["text"],
      additionalProperties: false,
    },
    handler: (input, ctx) => {
      const scope = ownerOf(owner, ctx);
      const sent = desk.send(scope.org, scope.uid, input.text as string);
      return { sent: true, messageId: sent.id };
    },
  });
}

/** A booking or a cancellation as the model reads it: the appointment's id, slot and status, or the desk's reason. */
function appointmentAnswer(result: DeskResult<Appointment>) {
  return result.ok
    ? {
        appointmentId: result.value.id,
        slotId: result.value.slotId,
        status: result.value.status,
      }
    : toolError({ error: result.reason });
}
