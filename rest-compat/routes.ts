import type { RestRoute } from './route';
import { authRoutes } from './routes/auth.routes';
import { jobRoutes } from './routes/jobs.routes';
import { batchRoutes } from './routes/batches.routes';
import { billingRoutes } from './routes/billing.routes';
import { mediaRoutes } from './routes/media.routes';
import { modelRoutes } from './routes/models.routes';
import { secretRoutes } from './routes/secrets.routes';
import { quotaRoutes } from './routes/quotas.routes';
import { telephonyRoutes } from './routes/telephony.routes';
import { teamRoutes } from './routes/teams.routes';
import { tokenRoutes } from './routes/tokens.routes';
import { webhookRoutes } from './routes/webhooks.routes';

/** The whole REST compatibility table, one entry per legacy path. */
export const restRoutes: RestRoute[] = [
  ...tokenRoutes,
  ...teamRoutes,
  ...authRoutes,
  ...mediaRoutes,
  ...modelRoutes,
  ...secretRoutes,
  ...telephonyRoutes,
  ...jobRoutes,
  ...batchRoutes,
  ...billingRoutes,
  ...quotaRoutes,
  ...webhookRoutes,
];
