// The recall benchmark's corpus (issue 18), written by the project: three clinics, four patients
// each, three sessions per patient. Sessions 1 and 2 tell facts at different sensitivities and
// change two of them (the medication dose and the contact channel); session 3 asks questions whose
// answers need recall. Every fact's text ends with a tag (`#p07v2`: patient 7, version 2) and every
// episode's with `#p07s1`, so what entered a request is measured from its bytes.
import type { Scope, Sensitivity } from "@alma-harness/core";

export interface Patient {
  readonly n: number;
  readonly scope: Scope;
  readonly name: string;
}

/** A fact as the scripted extraction reports it for one message. */
export interface CorpusFact {
  readonly patient: number;
  readonly key: string;
  readonly version: number;
  readonly text: string;
  /** The sensitivity of the turn it is told in (and so of the stored fact). */
  readonly sensitivity: Sensitivity;
}

export interface TellingTurn {
  readonly patient: Patient;
  readonly session: number;
  readonly message: string;
  readonly sensitivity: Sensitivity;
  readonly facts: readonly CorpusFact[];
  readonly episode: string;
}

export interface Question {
  readonly patient: Patient;
  readonly kind: "lexical" | "paraphrase" | "above_sensitivity" | "cross_patient";
  readonly text: string;
  readonly sensitivity: Sensitivity;
  /** The fact keys the answer needs (their current version, when at or below the question's sensitivity). */
  readonly needs: readonly string[];
}

const CLINICS = ["sunrise-clinic", "harbor-dental", "valley-care"];
const NAMES = [
  "Ana",
  "Bruno",
  "Carla",
  "Diego",
  "Elena",
  "Fabio",
  "Gina",
  "Hugo",
  "Iris",
  "Jonas",
  "Karen",
  "Luis",
];
const ALLERGENS = [
  "penicillin",
  "latex",
  "iodine",
  "sulfa",
  "aspirin",
  "ibuprofen",
  "peanuts",
  "shellfish",
  "codeine",
  "morphine",
  "pollen",
  "nickel",
];
const MEDICATIONS = [
  "metformin",
  "lisinopril",
  "atorvastatin",
  "levothyroxine",
  "amlodipine",
  "omeprazole",
  "sertraline",
  "salbutamol",
  "warfarin",
  "insulin",
  "prednisone",
  "gabapentin",
];
const CONDITIONS = [
  "type 2 diabetes",
  "hypertension",
  "asthma",
  "hypothyroidism",
  "epilepsy",
  "depression",
  "migraine",
  "arthritis",
  "anemia",
  "psoriasis",
  "glaucoma",
  "gout",
];
const CHANNELS = ["WhatsApp", "email", "phone call", "SMS"];

export const PATIENTS: readonly Patient[] = NAMES.map((name, i) => ({
  n: i + 1,
  scope: { org: CLINICS[i % 3] as string, uid: `p-${String(i + 1).padStart(4, "0")}` },
  name,
}));

const tag = (p: Patient, v: number) => `#p${String(p.n).padStart(2, "0")}v${v}`;
const stag = (p: Patient, s: number) => `#p${String(p.n).padStart(2, "0")}s${s}`;

function fact(
  p: Patient,
  key: string,
  version: number,
  text: string,
  sensitivity: Sensitivity,
): CorpusFact {
  return { patient: p.n, key, version, text: `${text} ${tag(p, version)}`, sensitivity };
}

/** Sessions 1 and 2 of every patient: what they tell, at which sensitivity, and what the extraction reports. */
export function tellingTurns(): TellingTurn[] {
  const out: TellingTurn[] = [];
  for (const [i, p] of PATIENTS.entries()) {
    const allergen = ALLERGENS[i] as string;
    const med = MEDICATIONS[i] as string;
    const condition = CONDITIONS[i] as string;
    const first = CHANNELS[i % 4] as string;
    const second = CHANNELS[(i + 1) % 4] as string;
    const turn = (
      session: number,
      message: string,
      sensitivity: Sensitivity,
      facts: CorpusFact[],
    ): TellingTurn => ({
      patient: p,
      session,
      message,
      sensitivity,
      facts,
      episode: `${p.name} ${message.toLowerCase().replace(/[.?!]$/, "")} ${stag(p, session)}`,
    });
    out.push(
      turn(1, `Please contact me by ${first}.`, "internal", [
        fact(p, "contact.channel", 1, `Contact channel: prefers ${first}.`, "internal"),
      ]),
      turn(1, `I am allergic to ${allergen}.`, "confidential", [
        fact(p, "allergy.drug", 1, `Allergy: allergic to ${allergen}.`, "confidential"),
      ]),
      turn(1, `I take ${med} 500 mg every morning.`, "confidential", [
        fact(
          p,
          "medication.dose",
          1,
          `Medication dose: ${med} 500 mg every morning.`,
          "confidential",
        ),
      ]),
      turn(2, `My doctor says I have ${condition}.`, "restricted", [
        fact(p, "condition.diagnosis", 1, `Condition: diagnosed with ${condition}.`, "restricted"),
      ]),
      turn(2, `The dose of ${med} is now 1000 mg.`, "confidential", [
        fact(
          p,
          "medication.dose",
          2,
          `Medication dose: ${med} 1000 mg every morning.`,
          "confidential",
        ),
      ]),
      turn(2, `I changed my mind, contact me by ${second} instead.`, "internal", [
        fact(p, "contact.channel", 2, `Contact channel: prefers ${second}.`, "internal"),
      ]),
    );
  }
  return out;
}

/** Session 3 of every patient: questions whose answers need recall, and probes that must recall nothing of anyone else. */
export function questions(): Question[] {
  const out: Question[] = [];
  for (const [i, p] of PATIENTS.entries()) {
    out.push(
      {
        patient: p,
        kind: "lexical",
        text: "Which antibiotic is safe with my allergy?",
        sensitivity: "confidential",
        needs: ["allergy.drug"],
      },
      {
        patient: p,
        kind: "lexical",
        text: "What medication dose do I take now?",
        sensitivity: "confidential",
        needs: ["medication.dose"],
      },
      {
        patient: p,
        kind: "lexical",
        text: "Which contact channel do you use for me?",
        sensitivity: "internal",
        needs: ["contact.channel"],
      },
      {
        patient: p,
        kind: "lexical",
        text: "Does my condition change my medication dose?",
        sensitivity: "restricted",
        needs: ["condition.diagnosis", "medication.dose"],
      },
      {
        patient: p,
        kind: "paraphrase",
        text: "Can I take amoxicillin for my sore throat?",
        sensitivity: "confidential",
        needs: ["allergy.drug"],
      },
      {
        patient: p,
        kind: "paraphrase",
        text: "How should the clinic reach me tomorrow?",
        sensitivity: "internal",
        needs: ["contact.channel"],
      },
      // Asked below the facts' sensitivity: the answer would need them, and recall must not give them.
      {
        patient: p,
        kind: "above_sensitivity",
        text: "Do I have an allergy or a condition, and what is my medication dose?",
        sensitivity: "internal",
        needs: [],
      },
    );
    // Another patient's words: what matches them belongs to that patient and must never come back.
    for (const [j, other] of PATIENTS.entries()) {
      if (j === i) continue;
      out.push({
        patient: p,
        kind: "cross_patient",
        text: `Am I allergic to ${ALLERGENS[j]}? Do I take ${MEDICATIONS[j]}? Is ${other.name} my name?`,
        sensitivity: "restricted",
        needs: ["allergy.drug"],
      });
    }
  }
  return out;
}

/** Every fact by its tag (`p07v2` → the fact), for the measure. */
export function factsByTag(turns: readonly TellingTurn[]): Map<string, CorpusFact> {
  const out = new Map<string, CorpusFact>();
  for (const t of turns)
    for (const f of t.facts)
      out.set(`p${String(f.patient).padStart(2, "0")}v${f.version}:${f.key}`, f);
  return out;
}
