import type { RestRoute } from './route';
import { authRoutes } from './routes/auth.routes';
import { tokenRoutes } from './routes/tokens.routes';

/** The whole REST compatibility table, one entry per legacy path. */
export const restRoutes: RestRoute[] = [...tokenRoutes, ...authRoutes];
