import { Router, type Request, type Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { requirePrincipal, type Principal } from '../src/common/principal';
import { toAppError } from '../src/common/errors';
import type { BatchLive } from '../src/batches/batch.live';
import type { BatchResults } from '../src/batches/batch.results';
import { batchSummary } from '../src/batches/batch.webhook';
import { sendError } from '../src/http/http.helpers';
import type { ApiDoc } from '../src/http/openapi/openapi.docs';
import {
  enumOf,
  integer,
  isoTime,
  nullable,
  number,
  object,
  string,
  uuid,
} from '../src/http/openapi/json-schema';

const KEEPALIVE_MS = 15_000;
const count = { ...integer, minimum: 0 };

/** The batch as its events and its `completed` webhook message carry it (batchSummary). */
const summarySchema = object({
  id: uuid,
  name: string,
  status: enumOf(['running', 'completed', 'canceled']),
  total: count,
  counts: object({
    queued: count,
    starting: count,
    running: count,
    succeeded: count,
    failed: count,
    canceled: count,
  }),
  created_at: isoTime,
  started_at: nullable(isoTime),
  finished_at: nullable(isoTime),
  run_seconds: number,
});

/** The batch byte streams in the OpenAPI document (served outside the route table). */
export const batchStreamDocs: ApiDoc[] = [
  {
    method: 'get',
    path: '/api/v1/batches/:id/results',
    operationId: 'BatchResults',
    summary:
      'Every result file of the batch and manifest.json, as one zip written while it is sent (docs/batches.md, "Results")',
    responses: {
      '200': {
        description:
          'the zip (zip64 when large): `<item>-<source name>/<output name>` per file, `manifest.json` last',
        content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } },
      },
    },
  },
  {
    method: 'get',
    path: '/api/v1/batches/:id/events',
    operationId: 'BatchEvents',
    summary:
      "The batch's counts as server-sent events: now, then as they change (at most 4 a second), until it ends",
    responses: {
      '200': {
        description: 'the stream; it ends after the `completed` event',
        content: {
          'text/event-stream': {
            schema: {
              type: 'string',
              description:
                'events `event: progress|completed`, `data: <JSON>`; `: keepalive` comments every 15 s',
            },
            'x-events': {
              progress: { description: 'the counts now', schema: summarySchema },
              completed: {
                description: 'the last event: the batch completed or was canceled',
                schema: summarySchema,
              },
            },
          },
        },
      },
    },
  },
];

/**
 * `GET /api/v1/batches/{id}/results` (the zip) and `GET /api/v1/batches/{id}/events` (SSE of its
 * coalesced counts): byte streams, so they call the batches module directly. Another owner's
 * batch is 404 before anything is sent.
 */
export function batchStreamRoutes(results: BatchResults, live: BatchLive): Router {
  const router = Router();
  const handle =
    (run: (req: Request, res: Response, principal: Principal) => Promise<void>) =>
    async (req: Request, res: Response) => {
      try {
        await run(req, res, requirePrincipal((res.locals.principal as Principal | null) ?? null));
      } catch (err) {
        const { error, unexpected } = toAppError(err);
        if (unexpected) req.log?.error({ err }, 'unexpected error in a batch stream');
        if (res.headersSent) return void res.destroy();
        sendError(req, res, error);
      }
    };
  router.get(
    '/api/v1/batches/:id/results',
    handle(async (req, res, principal) => {
      const archive = await results.archive(principal, String(req.params.id));
      res.writeHead(200, {
        'content-type': 'application/zip',
        'content-disposition': `attachment; filename="${archive.fileName}"`,
        'cache-control': 'no-store',
      });
      // An error half-way (a file that cannot be read) cuts the answer short: the zip is then unreadable, never wrong.
      await pipeline(archive.stream, res);
    }),
  );
  router.get(
    '/api/v1/batches/:id/events',
    handle(async (req, res, principal) => {
      let stop: (() => void) | null = null;
      let keepalive: NodeJS.Timeout | null = null;
      const end = () => {
        stop?.();
        if (keepalive) clearInterval(keepalive);
        if (!res.writableEnded) res.end();
      };
      stop = await live.watch(principal, String(req.params.id), (view, last) => {
        if (!res.headersSent)
          res.writeHead(200, {
            'content-type': 'text/event-stream; charset=utf-8',
            'cache-control': 'no-cache, no-transform',
            connection: 'keep-alive',
            'x-accel-buffering': 'no',
          });
        res.write(
          `event: ${last ? 'completed' : 'progress'}\ndata: ${JSON.stringify(batchSummary(view))}\n\n`,
        );
        if (last) setImmediate(end);
      });
      if (res.writableEnded) return stop();
      keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
      res.on('close', end);
    }),
  );
  return router;
}
