import { MODEL_JOB_MAX_ITEMS, ValidationError } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { MixedTenantJobError, type ModelJobInput, type ModelJobItemInput } from "../src/index.js";
import { checkJob } from "../src/input.js";

const SCOPE = { org: "clinic-7", uid: "nightly" };
const item = (n: number, over: Partial<ModelJobItemInput> = {}): ModelJobItemInput => ({
  customId: `day-${n}`,
  scope: SCOPE,
  sessionId: `patient-${n}`,
  intent: { tier: "fast", sensitivity: "confidential" },
  messages: [{ role: "user", blocks: [{ type: "text", text: `notes ${n}` }] }],
  ...over,
});
const job = (
  n: number,
  over: (i: number) => Partial<ModelJobItemInput> = () => ({}),
): ModelJobInput => ({
  jobId: "night-1",
  items: Array.from({ length: n }, (_, i) => item(i + 1, over(i))),
});

describe("a job's input, checked before any I/O", () => {
  it(`${MODEL_JOB_MAX_ITEMS} items are accepted, one more refused, none refused`, () => {
    expect(checkJob(job(MODEL_JOB_MAX_ITEMS)).items).toHaveLength(MODEL_JOB_MAX_ITEMS);
    expect(() => checkJob(job(MODEL_JOB_MAX_ITEMS + 1))).toThrow(ValidationError);
    expect(() => checkJob(job(0))).toThrow(ValidationError);
  });

  it("a custom id of 64 characters is accepted, 65 refused; repeated custom ids refused", () => {
    expect(checkJob(job(1, () => ({ customId: "c".repeat(64) }))).items[0]?.customId).toHaveLength(
      64,
    );
    expect(() => checkJob(job(1, () => ({ customId: "c".repeat(65) })))).toThrow(ValidationError);
    expect(() => checkJob(job(2, () => ({ customId: "same" })))).toThrow(ValidationError);
    expect(() => checkJob({ ...job(1), jobId: "has space" })).toThrow(ValidationError);
  });

  it("one scope per job: another tenant or another uid of the tenant is a MixedTenantJobError, wherever it is", () => {
    const tenant = () =>
      checkJob(job(3, (i) => (i === 2 ? { scope: { org: "clinic-8", uid: "nightly" } } : {})));
    expect(tenant).toThrow(MixedTenantJobError);
    expect(tenant).toThrow(
      expect.objectContaining({
        code: "model_job_mixed_tenants",
        reason: "tenant",
        path: "job.items[2]",
      }),
    );
    expect(() =>
      checkJob(job(2, (i) => (i === 1 ? { scope: { org: "clinic-7", uid: "desk" } } : {}))),
    ).toThrow(expect.objectContaining({ reason: "scope" }));
  });

  it("hostile input is refused typed: unknown fields, a getter (never run), a bad intent, temperature past 2, a zero token ceiling", () => {
    let ran = false;
    const getter = Object.defineProperty({ ...item(1) }, "sessionId", {
      enumerable: true,
      get: () => {
        ran = true;
        return "patient-1";
      },
    });
    for (const bad of [
      { ...job(1), extra: true },
      { jobId: "night-1", items: [{ ...item(1), prompt: "raw" }] },
      { jobId: "night-1", items: [getter] },
      {
        jobId: "night-1",
        items: [{ ...item(1), intent: { tier: "fast", sensitivity: "secret" } }],
      },
      { jobId: "night-1", items: [{ ...item(1), temperature: 2.01 }] },
      { jobId: "night-1", items: [{ ...item(1), maxOutputTokens: 0 }] },
      { jobId: "night-1", items: [{ ...item(1), messages: [] }] },
    ]) {
      expect(() => checkJob(bad)).toThrow();
    }
    expect(ran).toBe(false);
    expect(checkJob(job(1, () => ({ temperature: 2 }))).items[0]?.draft.temperature).toBe(2);
  });
});
