import type { Logger } from 'pino';
import type { IdempotentCreation } from '../common/idempotent-creation';
import type { Principal } from '../common/principal';
import type { Loaders } from './graphql.loaders';

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
