import type { Logger } from 'pino';
import type { Principal } from '../common/principal';
import type { Loaders } from './graphql.loaders';

/**
 * The request's `Idempotency-Key`, held (src/idempotency/): a service that creates something
 * records it under the key in the statement or transaction that creates it, so that a repeat of
 * the request after a crash, before its answer was stored, finds it instead of making another.
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

/**
 * What every resolver sees; built the same way for HTTP, REST-compat and websocket requests. A
 * module that puts a part of its own in every context (the job events' live feed) declares it
 * here by module augmentation from its own folder, so this ground imports no module.
 */
export interface RequestContext {
  requestId: string;
  principal: Principal | null;
  log: Logger;
  /** DataLoaders of this request (one set per request, never shared). */
  loaders: Loaders;
  /** Present when the request holds an Idempotency-Key (HTTP requests only). */
  idempotency?: IdempotentCreation;
}
