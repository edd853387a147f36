/**
 * A durability point a store set may offer (spec: a durable turn in five commits). A store set
 * that groups writes into one transaction (SQLite's and PostgreSQL's `commits: "grouped"`; on
 * PostgreSQL one transaction per turn, inside `ConversationStores.unit`) makes them durable here,
 * and at its own durability points (a journal `dispatch`, an admission's end, a sweep, an erasure).
 * The runner calls `commit` before every effect that does not start with one of those: before host
 * code runs (a hook, a permission controller, a tool handler, a media source) and before a step's
 * text is shown. A store set that commits every write (memory, `commits: "each"`) offers none.
 */
export interface DurabilityBarrier {
  /** Commits what is pending; a failure means those writes are lost and rejects (`StoreUnavailableError`). */
  commit(): Promise<void>;
}
