/**
 * The request's `Idempotency-Key`, held (src/idempotency/): a service that creates something
 * records it under the key in the statement or transaction that creates it, so that a repeat of
 * the request after a crash, before its answer was stored, finds it instead of making another.
 * Ground, so that the services that create (jobs, API keys) and the request context name it
 * without importing the idempotency module or GraphQL.
 */
export interface IdempotentCreation {
  /**
   * The next thing of `kind` an earlier attempt of this very request made and recorded (its id),
   * in the order they were made; undefined when there is none (then make it).
   */
  previous(kind: string): string | undefined;
  /** A statement that records `id` of `kind` under the key: run it in the creating transaction, or as a CTE part. */
  record(kind: string, id: string): { sql: string; params: unknown[] };
}
