import type { ExecutionStore, Scope } from "@alma-harness/core";
import type { Ledger } from "./account.js";

/**
 * Whether the journal proves a call was never sent (spec: undispatched-call-retry): no record, or
 * `not_dispatched`. A failed read proves nothing. A record still `prepared` (its dispatch write
 * failed, or never ran) is first cancelled as `store`, fenced by its own claim: if that commits,
 * the record is `not_dispatched` and its reservation released in the same transaction.
 */
export async function provenUnsent(
  journal: ExecutionStore,
  books: Ledger,
  scope: Scope,
  operationId: string,
  now: number,
): Promise<boolean> {
  try {
    let record = await journal.get(scope, operationId);
    if (record?.state === "prepared") {
      // Cancelled here, the call is no longer unsettled: nothing was sent and its reservation went with it.
      await journal
        .cancelPrepared({ scope, operationId, token: record.fenceToken }, "store", now)
        .then(
          () => {
            books.unsettled.delete(operationId);
          },
          () => undefined,
        );
      record = await journal.get(scope, operationId);
    }
    return record === undefined || record.state === "not_dispatched";
  } catch {
    return false;
  }
}
