import { createSqliteStores, type SqliteStoreOptions } from "@alma-harness/store-sqlite";
import { compose, type Runtime, type RuntimeConfig } from "./compose.js";

/** The embedded default: every store in one SQLite file (root results in an attached one). */
export function sqlite(config: RuntimeConfig & { readonly store?: Partial<SqliteStoreOptions> }): Runtime {
  const { store, ...rest } = config;
  const stores = createSqliteStores({ path: "./.alma/alma.db", ...store });
  return compose(rest, stores, async () => stores.close());
}
