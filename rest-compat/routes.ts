import type { RestRoute } from './route';
import { telephonyRoutes } from './routes/telephony.routes';
import { tokenRoutes } from './routes/tokens.routes';

/** The whole REST compatibility table, one entry per legacy path. */
export const restRoutes: RestRoute[] = [...tokenRoutes, ...telephonyRoutes];
