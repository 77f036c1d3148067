import type { RequestHandler } from 'express';
import type { PipelineStep } from '../src/http/http.pipeline';
import { startTestApp, type TestApp } from './helpers/app';
import { rawRequest, type Answer } from './helpers/raw-http';

/**
 * The app and its lanes are built from one declared pipeline (src/server/app.pipeline.ts): a
 * stage added to it runs on the generic stack and on both lanes, in its place. The test adds a
 * stage after the rate limit, and just after it a handler of the generic stack alone (a routes
 * step, which no lane runs) that marks the requests that walked the stack; requests are sent as
 * the lane tests send them, once to take each lane and once to go the generic way.
 */

let t: TestApp;
let alice: string;

const stage: RequestHandler = (_req, res, next) => {
  res.setHeader('x-added-stage', res.locals.principal ? 'after authentication' : 'anonymous');
  next();
};
const genericOnly: RequestHandler = (_req, res, next) => {
  res.setHeader('x-generic-stack', 'walked');
  next();
};

function withStage(steps: PipelineStep[]): PipelineStep[] {
  const at = steps.findIndex((s) => 'stage' in s && s.stage === 'rate limit') + 1;
  expect(at).toBeGreaterThan(0);
  return [
    ...steps.slice(0, at),
    { stage: 'added by the test', handle: stage },
    { routes: 'generic stack only', handle: genericOnly },
    ...steps.slice(at),
  ];
}

beforeAll(async () => {
  t = await startTestApp({}, { editPipeline: withStage });
  alice = `Bearer ${await t.tokenFor('pipeline-alice')}`;
});
afterAll(() => t.close());

function marks({ status, headers }: Answer) {
  return { status, stage: headers['x-added-stage'], generic: headers['x-generic-stack'] };
}

describe('a stage added to the pipeline', () => {
  it('runs on the REST lane and on the generic stack', async () => {
    const get = (headers: Record<string, string>) =>
      rawRequest(`${t.url}/api/v1/media`, { method: 'GET', headers: { authorization: alice, ...headers } });
    // A GET without a body takes the lane; with `Content-Length: 0` it goes the generic way.
    expect(marks(await get({}))).toEqual({ status: 200, stage: 'after authentication', generic: undefined });
    expect(marks(await get({ 'content-length': '0' }))).toEqual({
      status: 200,
      stage: 'after authentication',
      generic: 'walked',
    });
  });

  it('runs on the GraphQL lane and on the generic stack', async () => {
    const body = JSON.stringify({ query: '{ me { id } }' });
    const post = (chunked: boolean) =>
      rawRequest(
        `${t.url}/graphql`,
        {
          method: 'POST',
          headers: {
            authorization: alice,
            'content-type': 'application/json',
            ...(chunked ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
          },
        },
        body,
        chunked,
      );
    // A JSON body of a stated length takes the lane; a chunked one goes the generic way.
    expect(marks(await post(false))).toEqual({
      status: 200,
      stage: 'after authentication',
      generic: undefined,
    });
    expect(marks(await post(true))).toEqual({
      status: 200,
      stage: 'after authentication',
      generic: 'walked',
    });
  });

  it('runs on the paths no lane takes', async () => {
    const answer = await rawRequest(`${t.url}/api/v1/media/not-a-media-id`, {
      method: 'GET',
      headers: { authorization: alice },
    });
    expect(answer.status).toBe(404);
    expect(marks(answer)).toMatchObject({ stage: 'after authentication', generic: 'walked' });
  });
});
