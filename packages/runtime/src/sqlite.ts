import { createSqliteStores, type SqliteStoreOptions } from "@alma-harness/store-sqlite";
import { compose, type Runtime, type RuntimeConfig } from "./compose.js";

/**
 * The embedded default: every store in one SQLite file (root results in an attached one), with
 * writes grouped into one commit per effect (`commits: "grouped"`: the runner commits before every
 * effect); `store: { commits: "each" }` commits every write on its own.
 */
export function sqlite(config: RuntimeConfig & { readonly store?: Partial<SqliteStoreOptions> }): Runtime {
  const { store, ...rest } = config;
  const stores = createSqliteStores({ path: "./.alma/alma.db", commits: "grouped", ...store });
  return compose(rest, stores, async () => stores.close());
}
