import { asRecord, asString } from "../shared/neutral.js";

/** How far back a lost acknowledgement is looked for in a provider's batch listing. */
export interface ListingWindow {
  /** When the job was submitted (ms): the listing is read back to here, less the skew. */
  readonly since: number;
  /** How far before the submission a listed batch may say it was created (clock skew). */
  readonly skewMs: number;
  /** At most this many pages are read. */
  readonly maxPages: number;
}

/**
 * The batches a provider lists, newest first, that were created since the submission (less the
 * skew), page by page. The page that reaches an older batch is the last one read: nothing older
 * can be the job's. A reader that stops early fetches no further page.
 */
export async function* listedSince(
  window: ListingWindow,
  page: (after: string | undefined) => Promise<Record<string, unknown>>,
  createdAt: (batch: Record<string, unknown>) => number,
): AsyncGenerator<Record<string, unknown>, void, undefined> {
  let after: string | undefined;
  for (let n = 0; n < window.maxPages; n++) {
    const listing = await page(after);
    const data = Array.isArray(listing.data)
      ? listing.data.map(asRecord).filter((b) => b !== undefined)
      : [];
    let older = false;
    for (const batch of data) {
      // A creation time that cannot be read counts as older: it is never taken for the job's.
      if (!(createdAt(batch) >= window.since - window.skewMs)) {
        older = true;
        continue;
      }
      yield batch;
    }
    if (older || listing.has_more !== true) return;
    after = asString(listing.last_id);
    if (!after) return;
  }
}
