import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { fastLane, type LaneHandler } from './http.lane';

/** A small app whose generic stack marks its answers, with the lane in front of it. */
async function serve(stages: RequestHandler[], handler: LaneHandler) {
  const app = express();
  app.disable('x-powered-by');
  const errors: ErrorRequestHandler = (err: Error, _req, res, _next) => {
    res.status(500).json({ error: err.message, via: res.getHeader('x-via') ?? 'lane' });
  };
  for (const s of stages) app.use(s);
  app.use((_req, res, next) => {
    res.setHeader('x-via', 'generic');
    next();
  });
  app.get('/list', handler as RequestHandler);
  app.use(errors);
  const lane = fastLane(app, { stages, routes: new Map([['/list', handler]]), errors });
  const server = http.createServer((req, res) => {
    if (!lane(req, res)) app(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, close: () => new Promise((resolve) => server.close(resolve)) };
}

const order: RequestHandler = (req, res, next) => {
  res.locals.seen = [...((res.locals.seen as string[]) ?? []), 'stage'];
  next();
};
const answer: LaneHandler = (req, res) => {
  res.json({
    seen: res.locals.seen,
    via: res.getHeader('x-via') ?? 'lane',
    query: req.query,
    route: (req.route as { path: string }).path,
  });
};

describe('fastLane', () => {
  it('answers its GET paths with the same stages, in front of the generic stack', async () => {
    const s = await serve([order, order], answer);
    try {
      const res = await fetch(`${s.base}/list?a=1`);
      expect(await res.json()).toEqual({
        seen: ['stage', 'stage'],
        via: 'lane',
        query: { a: '1' },
        route: '/list',
      });
    } finally {
      await s.close();
    }
  });

  it('answers with the status line and request state of the generic stack', async () => {
    const seen: RequestHandler = (req, res, next) => {
      res.locals.seen = { route: req.route, body: req.body, express: typeof req.get };
      next();
    };
    const created: LaneHandler = (req, res) => {
      const status = req.query.created ? 201 : res.statusCode;
      res.status(status).json({ stage: res.locals.seen, route: (req.route as { path: string }).path });
    };
    const s = await serve([seen], created);
    try {
      for (const query of ['', '?created=1']) {
        const viaLane = await fetch(`${s.base}/list${query}`);
        const viaApp = await fetch(`${s.base}/list/${query}`); // another spelling: the generic way
        expect([viaLane.status, viaLane.statusText]).toEqual([viaApp.status, viaApp.statusText]);
        expect(await viaLane.json()).toEqual(await viaApp.json());
      }
      expect((await fetch(`${s.base}/list?created=1`)).statusText).toBe('Created');
    } finally {
      await s.close();
    }
  });

  it('leaves other methods, bodies, other spellings and other paths to the app', async () => {
    const s = await serve([order], answer);
    try {
      const generic = async (path: string, init?: RequestInit) =>
        ((await (await fetch(`${s.base}${path}`, init)).json()) as { via: string }).via;
      expect(await generic('/list/')).toBe('generic');
      expect(await generic('/LIST')).toBe('generic');
      // fetch drops a GET's Content-Length; node:http sends it.
      const withBody = await new Promise<string>((resolve, reject) =>
        http
          .request(`${s.base}/list`, { headers: { 'content-length': '0' } }, (res) => {
            resolve(String(res.headers['x-via']));
            res.resume();
          })
          .on('error', reject)
          .end(),
      );
      expect(withBody).toBe('generic');
      const head = await fetch(`${s.base}/list`, { method: 'HEAD' });
      expect(head.headers.get('x-via')).toBe('generic');
      const other = await fetch(`${s.base}/other`);
      expect(other.status).toBe(404);
    } finally {
      await s.close();
    }
  });

  it.each([
    ['next(err)', ((_req, _res, next) => next(new Error('refused'))) as RequestHandler],
    [
      'a throw',
      (() => {
        throw new Error('refused');
      }) as RequestHandler,
    ],
    ['a rejection', (async () => Promise.reject(new Error('refused'))) as RequestHandler],
  ])('sends %s of a stage to the error handler, skipping the rest', async (_name, stage) => {
    let reached = false;
    const s = await serve([stage], (req, res) => {
      reached = true;
      res.end();
    });
    try {
      const res = await fetch(`${s.base}/list`);
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ error: 'refused', via: 'lane' });
      expect(reached).toBe(false);
    } finally {
      await s.close();
    }
  });

  it("sends a handler's rejection to the error handler", async () => {
    const s = await serve([order], async () => Promise.reject(new Error('broken')));
    try {
      const res = await fetch(`${s.base}/list`);
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ error: 'broken', via: 'lane' });
    } finally {
      await s.close();
    }
  });
});
