import type { Logger } from 'pino';
import type { Principal } from '../auth/principal';
import type { JobLive } from '../jobs/job.live';
import type { Loaders } from './graphql.loaders';

/** What every resolver sees; built the same way for HTTP, REST-compat and websocket requests. */
export interface RequestContext {
  requestId: string;
  principal: Principal | null;
  log: Logger;
  /** DataLoaders of this request (one set per request, never shared). */
  loaders: Loaders;
  /** Live job events for subscriptions (one feed per process). */
  live: JobLive;
}
