import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Router } from 'express';
import type { Config } from '../config';

/** The service's version: package.json's, found above this file (from src/ or from dist/src/). */
function packageVersion(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file))
      return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version ?? '';
  }
  return '';
}

/**
 * `GET /` for a client that does not ask for HTML (curl): where things are, so a first check
 * finds the dashboard instead of a 404. Browsers get the web app (mounted before this).
 */
export function serviceIndexRoutes(config: Config): Router {
  const version = packageVersion();
  const at = (p: string) => new URL(p, config.publicUrl).href;
  const router = Router();
  router.get('/', (_req, res) => {
    const dashboard = existsSync(path.join(config.webDir, 'index.html'));
    res.json({
      service: 'media-platform',
      version,
      links: {
        dashboard: dashboard ? at('/') : null,
        graphql: at('/graphql'),
        ...(config.graphqlIde ? { graphiql: at('/graphql') } : {}),
        openapi: at('/api/openapi.json'),
        health: at('/healthz'),
        ready: at('/readyz'),
      },
      ...(dashboard
        ? { note: 'Open the dashboard in a browser; GraphiQL too when GRAPHQL_IDE is on.' }
        : { note: 'No web app build here (WEB_DIR): run `npm run build:web` for the dashboard.' }),
    });
  });
  return router;
}
