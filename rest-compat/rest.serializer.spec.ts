import { restRoutes } from './routes';
import { compileSerializer } from './rest.serializer';
import { object, string } from './schemas';

const schemaOf = (method: string, path: string) => {
  const r = restRoutes.find((r) => r.method === method && r.path === path);
  if (!r?.response) throw new Error(`${method} ${path} has no response schema`);
  return r.response;
};

/** The serializer's text parses to exactly what JSON.stringify writes of the same body. */
function expectSameAsJson(schema: Record<string, unknown>, body: unknown) {
  const text = compileSerializer(schema, 'test')(body);
  expect(JSON.parse(text)).toStrictEqual(JSON.parse(JSON.stringify(body)));
}

const tricky = 'quote " backslash \\ newline \n tab \t nul \u0000 emoji \u{1f600} lone \ud800 end';

const job = {
  id: '5f0c1a52-2f53-4a5e-9d1d-4a4c4f1f0a01',
  deployment_id: '5f0c1a52-2f53-4a5e-9d1d-4a4c4f1f0a02',
  model_id: '5f0c1a52-2f53-4a5e-9d1d-4a4c4f1f0a03',
  status: 'failed',
  executor: 'local',
  external_id: null,
  exit_code: -1,
  error: tricky,
  created_at: '2026-11-22T10:15:03.120Z',
  started_at: null,
  finished_at: '2026-11-22T10:15:04.000Z',
  queue_seconds: 0.000123,
  run_seconds: 12345678.9,
  output: {
    files: [{ id: 'a', name: tricky, url: 'http://x/f', content_type: 'text/plain', size: 9007199254740991 }],
    result: { nested: [1, 'two', null, { three: true }], empty: {}, float: 1.5e-7 },
  },
  result_urls: [],
  log_tail: '',
};

describe('compiled REST serializers', () => {
  it('compile for every route of the table that answers a body', () => {
    for (const r of restRoutes.filter((r) => r.response))
      expect(typeof compileSerializer(r.response!, r.path)).toBe('function');
  });

  it('write a job exactly as JSON.stringify: nulls, negative and large integers, fractions, any result', () => {
    const schema = schemaOf('get', '/api/v1/jobs/:id');
    expectSameAsJson(schema, job);
    expectSameAsJson(schema, { ...job, output: { files: [], result: null }, exit_code: null });
    expectSameAsJson(schemaOf('get', '/api/v1/jobs'), [job, { ...job, status: 'running', error: null }]);
  });

  it("write a deployment's arguments, numbers and strings, as given", () => {
    const deployment = {
      id: 'd',
      name: 'n',
      model_id: 'm',
      args: { width: 256, ratio: 0.5, text: '12', empty: '' },
      source_asset_id: null,
      target_asset_id: 't',
      created_at: '2026-11-22T10:15:03.000Z',
      job,
    };
    expectSameAsJson(schemaOf('get', '/api/v1/deployments/:id'), deployment);
  });

  it("write a model's optional fields only where set, and argument tags null or listed", () => {
    const model = {
      args: {
        image: { type: 'file', format: ':value', example: '', optional: false, tags: null },
        width: {
          type: 'int',
          format: '--width=:value',
          description: 'px',
          example: '256',
          optional: true,
          tags: ['a'],
          min: 0,
          max: 4096.5,
        },
      },
      black_icon: '',
      white_icon: '',
      color_icon: '',
      classification: 'fast',
      example_outputs: [],
      id: 'm',
      name: tricky,
      version: '1',
      run_count: 0,
      tags: [],
      updated_at: '2026-11-22 10:15:03.12 +0000 UTC',
    };
    expectSameAsJson(schemaOf('get', '/api/v1/models/:id'), model);
    expectSameAsJson(schemaOf('get', '/api/v1/models/:id'), { ...model, description: 'set' });
  });

  it('refuse an object schema that does not say whether it has more properties', () => {
    expect(() => compileSerializer({ type: 'object', properties: { a: string } }, 'GET /x')).toThrow(
      /GET \/x: an object of the response schema must say its additionalProperties/,
    );
    expect(() =>
      compileSerializer(object({ list: { type: 'array', items: { type: 'object' } } }), 'GET /y'),
    ).toThrow(/GET \/y/);
  });
});
