import { createPostgresStores, type PostgresStoreOptions } from "@alma-harness/store-postgres";
import { compose, type Runtime, type RuntimeConfig } from "./compose.js";
import { sharedTrailKey } from "./trail-key.js";

/**
 * Many host processes on one PostgreSQL database; fences and claims are enforced in the database.
 * Each turn's writes are grouped into one transaction per effect (`commits: "grouped"`: the runner
 * runs the turn in a unit and commits before every effect); `store: { commits: "each" }` commits
 * every write on its own. `trailKey` is required: every process on the database shares it.
 */
export async function postgres(
  config: RuntimeConfig & { readonly store: PostgresStoreOptions },
): Promise<Runtime> {
  const { store, ...rest } = config;
  const key = sharedTrailKey(rest);
  const stores = await createPostgresStores({ commits: "grouped", ...store, trailKey: key });
  return compose({ ...rest, trailKey: key }, stores, () => stores.close());
}
