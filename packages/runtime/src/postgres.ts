import { createPostgresStores, type PostgresStoreOptions } from "@alma-harness/store-postgres";
import { compose, type Runtime, type RuntimeConfig } from "./compose.js";

/** Many host processes on one PostgreSQL database; fences and claims are enforced in the database. */
export async function postgres(config: RuntimeConfig & { readonly store: PostgresStoreOptions }): Promise<Runtime> {
  const { store, ...rest } = config;
  const stores = await createPostgresStores(store);
  return compose(rest, stores, () => stores.close());
}
