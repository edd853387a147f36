import { AlmaError } from "@alma-harness/core";

/**
 * A job whose items do not share one scope: a job mixes no tenants (spec: model-jobs). `reason` is
 * `tenant` (another org) or `scope` (the same org, another uid: a job is one scope's, as its
 * journal records and its store row are). Raised before any I/O.
 */
export class MixedTenantJobError extends AlmaError {
  readonly path: string;
  readonly reason: "tenant" | "scope";
  constructor(path: string, reason: "tenant" | "scope") {
    super(
      "model_job_mixed_tenants",
      `${path}: a job's items share one scope (${reason === "tenant" ? "another tenant" : "another scope of the tenant"})`,
    );
    this.path = path;
    this.reason = reason;
  }
}
