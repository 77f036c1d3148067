import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import { createLogger, type Logger } from '../common/logger';
import { fastLane, type LaneHandler } from './http.lane';
import { errorResponses, requestIds, requestLogs } from './http.helpers';

/** Log lines of one logger at `warn`, parsed. */
function capture(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger('warn', { destination: { write: (l: string) => void lines.push(JSON.parse(l)) } });
  return { log, lines };
}

/**
 * An app with the service's first stages and the lane in front of it; `/fail` answers 500,
 * `/missing` 404, `/logs` logs through `req.log` twice and tells whether the two were the same.
 */
async function serve(log: Logger) {
  const app = express();
  const stages = [requestIds(), requestLogs(log)];
  for (const s of stages) app.use(s);
  const routes: [string, LaneHandler][] = [
    ['/fail', (_req, res) => void res.status(500).json({ failed: true })],
    ['/missing', (_req, res) => void res.status(404).json({ missing: true })],
    [
      '/logs',
      (req, res) => {
        const first = req.log;
        first.warn('from a handler');
        res.json({ same: first === req.log, own: Object.prototype.hasOwnProperty.call(req, 'log') });
      },
    ],
  ];
  for (const [path, handler] of routes) app.get(path, handler as RequestHandler);
  const errors = errorResponses(1000, log);
  app.use(errors);
  const lane = fastLane(app, { stages, routes: new Map(routes), errors });
  const server = http.createServer((req, res) => {
    // `?generic` skips the lane: both ways must log the same.
    if (req.url?.includes('generic') || !lane(req, res)) void app(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, close: () => new Promise((resolve) => server.close(resolve)) };
}

describe('requestLogs above info', () => {
  it.each(['', '?generic=1'])('logs 5xx answers with the request id, not 4xx (%s)', async (query) => {
    const { log, lines } = capture();
    const s = await serve(log);
    try {
      await fetch(`${s.base}/missing${query}`, { headers: { 'x-request-id': 'req-404' } });
      await fetch(`${s.base}/fail${query ? `${query}&` : '?'}token=secret`, {
        headers: { 'x-request-id': 'req-500' },
      });
      // The 404 went first: once the 500's line is there, both have finished.
      while (!lines.some((l) => l.msg === 'request errored')) await new Promise((r) => setTimeout(r, 10));
      const errored = lines.filter((l) => l.msg === 'request errored');
      expect(errored).toHaveLength(1);
      expect(errored[0]).toMatchObject({
        level: 50,
        reqId: 'req-500',
        req: { method: 'GET', url: expect.stringContaining('token=%5Bredacted%5D') },
        res: { statusCode: 500 },
      });
    } finally {
      await s.close();
    }
  });

  it.each(['', '?generic=1'])('makes one child logger per request, on first use (%s)', async (query) => {
    const { log, lines } = capture();
    const s = await serve(log);
    try {
      const answers = await Promise.all(
        ['a', 'b'].map(async (id) =>
          (await fetch(`${s.base}/logs${query}`, { headers: { 'x-request-id': id } })).json(),
        ),
      );
      expect(answers).toEqual([
        { same: true, own: false },
        { same: true, own: false },
      ]);
      const handlerLines = lines.filter((l) => l.msg === 'from a handler').map((l) => l.reqId);
      expect(handlerLines.sort()).toEqual(['a', 'b']);
    } finally {
      await s.close();
    }
  });

  it("keeps each app's logger apart, and an assigned req.log is the request's own", async () => {
    const one = capture();
    const two = capture();
    const a = await serve(one.log);
    const b = await serve(two.log);
    try {
      await fetch(`${a.base}/logs`, { headers: { 'x-request-id': 'in-a' } });
      await fetch(`${b.base}/logs`, { headers: { 'x-request-id': 'in-b' } });
      expect(one.lines.map((l) => l.reqId)).toEqual(['in-a']);
      expect(two.lines.map((l) => l.reqId)).toEqual(['in-b']);
      // pino-http (at info) assigns req.log: it becomes a plain property of that request.
      const proto = Object.create(express.request) as object; // an app's request prototype
      const req = Object.create(proto) as express.Request;
      requestLogs(one.log)(req, { on: () => undefined } as never, () => undefined);
      const mine = one.log.child({ mine: true });
      req.log = mine;
      expect(req.log).toBe(mine);
      expect(Object.getOwnPropertyDescriptor(req, 'log')).toMatchObject({ value: mine, writable: true });
      expect(Object.getPrototypeOf(req)).toBe(proto);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
