import type { Logger } from 'pino';
import type { Principal } from '../auth/principal';

/** What every resolver sees; built the same way for HTTP, REST-compat and websocket requests. */
export interface RequestContext {
  requestId: string;
  principal: Principal | null;
  log: Logger;
}
