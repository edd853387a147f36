import { createSqliteStores, type SqliteStoreOptions } from "@alma-harness/store-sqlite";
import { compose, type Runtime, type RuntimeConfig } from "./compose.js";
import { embeddedTrailKey } from "./trail-key.js";

/**
 * The embedded default: every store in one SQLite file (root results in an attached one), with
 * writes grouped into one commit per effect (`commits: "grouped"`: the runner commits before every
 * effect); `store: { commits: "each" }` commits every write on its own. Without `trailKey`, the
 * key is read from (or created in) `trail-key` beside the database file.
 */
export function sqlite(
  config: RuntimeConfig & { readonly store?: Partial<SqliteStoreOptions> },
): Runtime {
  const { store, ...rest } = config;
  const options = { path: "./.alma/alma.db", commits: "grouped" as const, ...store };
  const key = embeddedTrailKey(rest, options.path);
  // The same key marks erased sessions' tombstones in the file.
  const stores = createSqliteStores({ ...options, trailKey: key });
  return compose({ ...rest, trailKey: key }, stores, async () => stores.close());
}
