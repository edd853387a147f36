/**
 * The example agent's world: two tenant clinics and their small system of record (hours, slots,
 * patients, appointments, an outbox). It stands in for the product's own database; Alma never owns
 * it. In memory and seeded deterministically, so the demo and the tests see the same clinics.
 */

export const WEEKDAYS = [
  "sunday",
  "monday",
  "tuesday",
  "wednesday",
  "thursday",
  "friday",
  "saturday",
] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export interface Patient {
  readonly id: string;
  readonly name: string;
  readonly born: string;
  readonly allergies: readonly string[];
  readonly notes: string;
}

export interface Clinic {
  readonly org: string;
  readonly name: string;
  /** Opening hours per weekday, `null` when closed (clinic-local times; the demo treats them as UTC). */
  readonly hours: Readonly<
    Record<Weekday, { readonly open: string; readonly close: string } | null>
  >;
  /** Appointment start times offered on open days. */
  readonly slotTimes: readonly string[];
  readonly patients: readonly Patient[];
}

export interface Appointment {
  readonly id: string;
  readonly org: string;
  readonly patientId: string;
  readonly slotId: string;
  readonly status: "booked" | "cancelled";
}

export interface SentMessage {
  readonly id: string;
  readonly org: string;
  readonly patientId: string;
  readonly text: string;
  readonly at: number;
}

const WEEKDAY_HOURS = { open: "08:00", close: "18:00" };

export const CLINICS: readonly Clinic[] = [
  {
    org: "sunrise-clinic",
    name: "Sunrise Family Clinic",
    hours: {
      sunday: null,
      monday: WEEKDAY_HOURS,
      tuesday: WEEKDAY_HOURS,
      wednesday: WEEKDAY_HOURS,
      thursday: WEEKDAY_HOURS,
      friday: WEEKDAY_HOURS,
      saturday: { open: "09:00", close: "13:00" },
    },
    slotTimes: ["09:00", "10:30", "14:00", "16:30"],
    patients: [
      {
        id: "p-1001",
        name: "Ana Souza",
        born: "1987-04-12",
        allergies: ["penicillin"],
        notes: "Asthma, controlled. Prefers morning visits.",
      },
      {
        id: "p-1002",
        name: "Bruno Lima",
        born: "1979-11-02",
        allergies: [],
        notes: "Annual check-up due in March.",
      },
    ],
  },
  {
    org: "harbor-dental",
    name: "Harbor Dental Care",
    hours: {
      sunday: null,
      monday: { open: "10:00", close: "19:00" },
      tuesday: { open: "10:00", close: "19:00" },
      wednesday: null,
      thursday: { open: "10:00", close: "19:00" },
      friday: { open: "10:00", close: "16:00" },
      saturday: null,
    },
    slotTimes: ["10:00", "11:30", "15:00"],
    patients: [
      {
        id: "p-2001",
        name: "Carla Mendes",
        born: "1992-07-30",
        allergies: ["latex"],
        notes: "Crown on 36 fitted in September.",
      },
      {
        id: "p-2002",
        name: "Diego Rocha",
        born: "2001-01-19",
        allergies: [],
        notes: "Orthodontic review every 8 weeks.",
      },
    ],
  },
];

const DAY_MS = 86_400_000;

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function weekdayOf(day: string): Weekday {
  return WEEKDAYS[new Date(`${day}T00:00:00Z`).getUTCDay()] as Weekday;
}

export type DeskResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: string };

/** The clinics' system of record, keyed by tenant (`org`). */
export class ClinicDesk {
  readonly #clinics: ReadonlyMap<string, Clinic>;
  readonly #appointments: Appointment[] = [];
  readonly #outbox: SentMessage[] = [];
  /** Effects keyed by the tool call that made them, so a repeated call never books twice. */
  readonly #effects = new Map<string, Appointment>();
  #seq = 0;

  constructor(
    clinics: readonly Clinic[],
    private readonly now: () => number,
  ) {
    this.#clinics = new Map(clinics.map((c) => [c.org, c]));
  }

  clinics(): readonly Clinic[] {
    return [...this.#clinics.values()];
  }

  clinic(org: string): Clinic | undefined {
    return this.#clinics.get(org);
  }

  patient(org: string, patientId: string): Patient | undefined {
    return this.#clinics.get(org)?.patients.find((p) => p.id === patientId);
  }

  /** `today`, `tomorrow`, a weekday name (the next one, today included) or `YYYY-MM-DD`. */
  resolveDay(day: string | undefined): string | undefined {
    const today = isoDay(this.now());
    const d = (day ?? "today").trim().toLowerCase();
    if (d === "today") return today;
    if (d === "tomorrow") return isoDay(this.now() + DAY_MS);
    const index = (WEEKDAYS as readonly string[]).indexOf(d);
    if (index >= 0) {
      const start = new Date(`${today}T00:00:00Z`).getUTCDay();
      return isoDay(this.now() + ((index - start + 7) % 7) * DAY_MS);
    }
    return /^\d{4}-\d{2}-\d{2}$/.test(d) && !Number.isNaN(Date.parse(`${d}T00:00:00Z`))
      ? d
      : undefined;
  }

  hours(
    org: string,
    day: string,
  ): { day: string; weekday: Weekday; open: string | null; close: string | null } {
    const weekday = weekdayOf(day);
    const h = this.#clinics.get(org)?.hours[weekday] ?? null;
    return { day, weekday, open: h?.open ?? null, close: h?.close ?? null };
  }

  /** Free slots from `fromDay` on, over `days` days, at most `limit`, excluding booked ones and the past. */
  freeSlots(org: string, fromDay: string, days = 5, limit = 6): string[] {
    const clinic = this.#clinics.get(org);
    if (!clinic) return [];
    const taken = new Set(
      this.#appointments.filter((a) => a.org === org && a.status === "booked").map((a) => a.slotId),
    );
    const out: string[] = [];
    const start = Date.parse(`${fromDay}T00:00:00Z`);
    for (let i = 0; i < days && out.length < limit; i += 1) {
      const day = isoDay(start + i * DAY_MS);
      if (!clinic.hours[weekdayOf(day)]) continue;
      for (const time of clinic.slotTimes) {
        const slot = `${day}T${time}`;
        if (!taken.has(slot) && Date.parse(`${slot}:00Z`) > this.now() && out.length < limit)
          out.push(slot);
      }
    }
    return out;
  }

  book(org: string, patientId: string, slotId: string, effectKey: string): DeskResult<Appointment> {
    const done = this.#effects.get(effectKey);
    if (done) return { ok: true, value: done };
    const day = slotId.slice(0, 10);
    if (!this.freeSlots(org, day, 1, 100).includes(slotId))
      return { ok: false, reason: `the slot ${slotId} is not free` };
    this.#seq += 1;
    const appointment: Appointment = {
      id: `apt-${this.#seq}`,
      org,
      patientId,
      slotId,
      status: "booked",
    };
    this.#appointments.push(appointment);
    this.#effects.set(effectKey, appointment);
    return { ok: true, value: appointment };
  }

  cancel(org: string, patientId: string, appointmentId: string): DeskResult<Appointment> {
    const index = this.#appointments.findIndex((a) => a.org === org && a.id === appointmentId);
    const found = this.#appointments[index];
    if (!found || found.patientId !== patientId)
      return { ok: false, reason: `no appointment ${appointmentId} for you` };
    if (found.status === "cancelled") return { ok: true, value: found };
    const cancelled: Appointment = { ...found, status: "cancelled" };
    this.#appointments[index] = cancelled;
    return { ok: true, value: cancelled };
  }

  /** The clinic's appointments on `day` (`YYYY-MM-DD`), booked and cancelled, by slot: what the nightly summary is given. */
  dayOf(org: string, day: string): readonly Appointment[] {
    return this.#appointments
      .filter((a) => a.org === org && a.slotId.startsWith(`${day}T`))
      .sort((a, b) => a.slotId.localeCompare(b.slotId));
  }

  appointmentsOf(org: string, patientId: string): readonly Appointment[] {
    return this.#appointments.filter((a) => a.org === org && a.patientId === patientId);
  }

  send(org: string, patientId: string, text: string): SentMessage {
    this.#seq += 1;
    const message: SentMessage = { id: `msg-${this.#seq}`, org, patientId, text, at: this.now() };
    this.#outbox.push(message);
    return message;
  }

  outbox(org: string): readonly SentMessage[] {
    return this.#outbox.filter((m) => m.org === org);
  }
}
