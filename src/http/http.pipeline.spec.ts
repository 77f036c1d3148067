import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, {
  Router,
  type ErrorRequestHandler,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { mountPipeline, type PipelineStep } from './http.pipeline';

/** A stage that records its name in the answer, in order. */
function mark(name: string): RequestHandler {
  return (_req, res, next) => {
    res.locals.seen = [...((res.locals.seen as string[]) ?? []), name];
    next();
  };
}

const answer = (_req: Request, res: Response) => {
  res.json({ seen: res.locals.seen ?? [] });
};
const errors: ErrorRequestHandler = (err: Error, _req, res, _next) => {
  res.status(500).json({ error: err.message });
};

/** The app with its lanes in front; `generic` in `seen` marks a request that walked the stack. */
async function serve(steps: PipelineStep[]) {
  const app = express();
  const lanes = mountPipeline(app, steps, errors);
  const server = http.createServer((req, res) => {
    for (const lane of lanes) if (lane(req, res)) return;
    void app(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    lanes,
    seen: async (path: string, init: RequestInit = {}) =>
      ((await (await fetch(`${base}${path}`, init)).json()) as { seen: string[] }).seen,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const generic = { routes: 'generic marker', handle: mark('generic') };

describe('mountPipeline', () => {
  it('runs each stage on the lanes its requests take, in the order of the list', async () => {
    const s = await serve([
      { stage: 'first', handle: mark('first') },
      { stage: 'api', handle: mark('api'), paths: ['/api'] },
      { stage: 'elsewhere', handle: mark('elsewhere'), paths: ['/other'] },
      {
        stage: 'body',
        handle: (req, res, next) => (req.headers['content-length'] ? mark('body')(req, res, next) : next()),
        withBody: true,
      },
      { stage: 'posts', handle: mark('posts'), methods: ['POST'] },
      generic,
      {
        routes: 'list',
        handle: Router().get('/api/list', answer),
        lane: { routes: new Map([['/api/list', answer]]) },
      },
      {
        routes: 'items',
        handle: Router().post('/api/items', answer),
        lane: { method: 'POST', routes: new Map([['/api/items', answer]]) },
      },
      { stage: 'late', handle: mark('late') },
    ]);
    try {
      expect(s.lanes).toHaveLength(2);
      // The GET lane: no body stage, no POST stage; the generic way runs the same (the body stage
      // passes a GET without a body on, the POST stage is not run for a GET), then walks the stack.
      expect(await s.seen('/api/list')).toEqual(['first', 'api']);
      expect(await s.seen('/api/list/')).toEqual(['first', 'api', 'generic']);
      const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' };
      expect(await s.seen('/api/items', post)).toEqual(['first', 'api', 'body', 'posts']);
      expect(await s.seen('/api/items/', post)).toEqual(['first', 'api', 'body', 'posts', 'generic']);
    } finally {
      await s.close();
    }
  });

  it('leaves to the generic stack a lane path that a router before it answers', async () => {
    const s = await serve([
      { stage: 'first', handle: mark('first') },
      { routes: 'earlier', handle: Router().get('/taken', answer) },
      generic,
      {
        routes: 'table',
        handle: Router().get('/taken', answer).get('/free', answer),
        lane: {
          routes: new Map([
            ['/taken', answer],
            ['/free', answer],
          ]),
        },
      },
    ]);
    try {
      expect(await s.seen('/taken')).toEqual(['first']); // the earlier router's answer
      expect(await s.seen('/free')).toEqual(['first']); // the lane's
      expect(await s.seen('/free/')).toEqual(['first', 'generic']);
    } finally {
      await s.close();
    }
  });

  it('refuses a stage that guards some of a lane’s paths but not all', () => {
    const steps: PipelineStep[] = [
      { stage: 'half', handle: mark('half'), paths: ['/a'] },
      {
        routes: 'table',
        handle: Router(),
        lane: {
          routes: new Map([
            ['/a/list', answer],
            ['/b/list', answer],
          ]),
        },
      },
    ];
    expect(() => mountPipeline(express(), steps, errors)).toThrow(/"half" guards some of a lane's paths/);
  });
});
