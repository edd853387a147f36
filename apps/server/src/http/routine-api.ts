import { z } from "@hono/zod-openapi";
import {
  ROUTINE_RESOLVE_ACTIONS,
  ROUTINE_RUN_STATES,
  type RoutineResolveAction,
  type RoutineRunState,
} from "@alma-harness/core";
import { OrgFilter, operatorRoute } from "./admin-api.js";
import type { HostContext } from "./context.js";
import { answers, body, Id, params, ScopePart } from "./schemas.js";

const Routine = params({ org: ScopePart, id: Id });

/** What an operator's routine body may hold; the scheduler's `saveRoutine` checks each part. */
const RoutineBody = body({
  goal: z.unknown().optional().openapi({ description: "what the routine's turn is asked to do" }),
  intent: z.unknown().optional().openapi({ description: "its routing intent (tier, sensitivity)" }),
  schedule: z.unknown().optional().openapi({ description: "when it runs (the scheduler's shape)" }),
  profile: z.unknown().optional(),
  cap: z.unknown().optional().openapi({ description: "its spend cap per run" }),
  catchUp: z.unknown().optional().openapi({ description: "what a missed slot does" }),
  execution: z.unknown().optional().openapi({ description: "`turn` or `job`" }),
  enabled: z.unknown().optional(),
});

/** The routine routes of `routine-routes.ts`, each declared once. */
export function routineApi(host: HostContext) {
  return {
    list: operatorRoute(host, {
      method: "get",
      path: "/v1/admin/routines",
      summary: "The routines, with the scheduler's last tick",
      responses: answers({ 200: "`{routines, lastTick}`" }, [401]),
    }),
    runs: operatorRoute(host, {
      method: "get",
      path: "/v1/admin/routines/runs",
      summary: "The routines' runs, newest slot first (200 at most)",
      request: {
        query: OrgFilter.extend({
          routineId: Id.optional(),
          state: z.enum(ROUTINE_RUN_STATES as unknown as [RoutineRunState]).optional(),
        }),
      },
      responses: answers({ 200: "`{runs}`" }, [401, 404, 422]),
    }),
    inbox: operatorRoute(host, {
      method: "get",
      path: "/v1/admin/routines/inbox",
      summary: "The staff inbox the routines delivered to",
      request: { query: OrgFilter },
      responses: answers({ 200: "`{messages}`" }, [401, 404, 422]),
    }),
    tick: operatorRoute(host, {
      method: "post",
      path: "/v1/admin/routines/tick",
      summary: "Run the scheduler's tick now",
      responses: answers({ 200: "`{tick}`" }, [401]),
    }),
    put: operatorRoute(host, {
      method: "put",
      path: "/v1/admin/routines/{org}/{id}",
      summary: "Save a clinic's routine (its scope and destination are the host's)",
      request: { params: Routine, body: RoutineBody },
      responses: answers(
        { 200: "`{routine}` replaced", 201: "`{routine}` created" },
        [401, 404, 413, 415, 422],
      ),
    }),
    remove: operatorRoute(host, {
      method: "delete",
      path: "/v1/admin/routines/{org}/{id}",
      summary: "Delete a routine",
      request: { params: Routine },
      responses: answers({ 200: "`{removed}`" }, [401, 404, 422]),
    }),
    resolve: operatorRoute(host, {
      method: "post",
      path: "/v1/admin/routines/{org}/{id}/runs/{slot}/resolve",
      summary: "Resolve a `reconciliation_required` or `failed` run",
      request: {
        params: params({
          org: ScopePart,
          id: Id,
          slot: z
            .string()
            .regex(/^\d{1,15}$/, "must be the run's epoch milliseconds")
            .openapi({ description: "the run's slot, epoch milliseconds" }),
        }),
        body: body({
          action: z.enum(ROUTINE_RESOLVE_ACTIONS as unknown as [RoutineResolveAction]).openapi({
            description: "`abandon`, `confirm_completed` or `rerun`",
          }),
        }),
      },
      responses: answers({ 200: "`{run}`" }, [401, 404, 409, 413, 415, 422]),
    }),
  };
}
