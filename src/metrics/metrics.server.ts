import http from 'node:http';
import type { Logger } from '../common/logger';
import { drain, listen } from '../server/http.helpers';
import type { Metrics } from './metrics';

export interface MetricsServer {
  server: http.Server;
  listen(port: number, host: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * `METRICS_PORT`: `/metrics` (Prometheus text), `/healthz` and `/readyz`, whatever roles the
 * process runs, so a worker-only process can be scraped and probed too.
 */
export function metricsServer(metrics: Metrics, ready: () => Promise<boolean>, log: Logger): MetricsServer {
  const json = (res: http.ServerResponse, status: number, body: unknown, headers = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return json(res, 405, { error: { code: 'BAD_REQUEST', message: 'GET only' } });
    if (path === '/healthz') return json(res, 200, { status: 'ok' });
    // Answered as the API's /readyz: 503 UNAVAILABLE with Retry-After while the database is away.
    if (path === '/readyz')
      return void ready().then((ok) =>
        ok
          ? json(res, 200, { status: 'ready' })
          : json(
              res,
              503,
              { error: { code: 'UNAVAILABLE', message: 'the database is unreachable' } },
              { 'retry-after': '5' },
            ),
      );
    if (path === '/metrics')
      return void metrics.scrape().then(
        ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
        (err) => {
          log.warn({ err }, 'metrics scrape failed');
          json(res, 500, { error: { code: 'INTERNAL', message: 'metrics unavailable' } });
        },
      );
    json(res, 404, { error: { code: 'NOT_FOUND', message: `no route for ${req.method} ${path}` } });
  });
  return {
    server,
    listen: (port, host) => listen(server, port, host),
    close: () => (server.listening ? drain(server, 1000) : Promise.resolve()),
  };
}
