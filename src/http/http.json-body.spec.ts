import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import express, { type ErrorRequestHandler } from 'express';
import { plainJsonBodies } from './http.json-body';

const LIMIT = 64;

/** What a request's body became, or the error type and status it was refused with. */
const report: ErrorRequestHandler = (err: { status?: number; type?: string }, _req, res, _next) => {
  res.json({ status: err.status, type: err.type });
};

let server: http.Server;
let base: string;

beforeAll(async () => {
  const app = express();
  const full = express.json({ limit: LIMIT, type: ['application/json', 'application/*+json'] });
  // The fallback marks the answers it read, to tell which requests the plain reader took itself.
  const marked: express.RequestHandler = (req, res, next) => {
    res.setHeader('x-read-by', 'body-parser');
    full(req, res, next);
  };
  app.post(
    '/plain',
    plainJsonBodies(LIMIT, marked),
    (req, res) => void res.json({ body: req.body as unknown }),
  );
  app.post('/full', full, (req, res) => void res.json({ body: req.body as unknown }));
  app.use(report);
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

/** Sends the body in the given pieces (to cut a character in two) with its Content-Length. */
function send(
  path: string,
  pieces: Buffer[],
  headers: Record<string, string>,
): Promise<{ answer: unknown; readBy: string }> {
  return new Promise((resolve, reject) => {
    const length = pieces.reduce((n, p) => n + p.length, 0);
    const req = http.request(
      `${base}${path}`,
      { method: 'POST', headers: { 'content-length': String(length), ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          resolve({ answer: JSON.parse(text), readBy: String(res.headers['x-read-by'] ?? 'plain') }),
        );
      },
    );
    req.on('error', reject);
    (async () => {
      for (const p of pieces) {
        req.write(p);
        await new Promise((r) => setTimeout(r, 5));
      }
      req.end();
    })().catch(reject);
  });
}

const json = { 'content-type': 'application/json' };
const cases: [string, Buffer[], Record<string, string>, 'plain' | 'body-parser'][] = [
  ['an object', [Buffer.from('{"a":1}')], json, 'plain'],
  ['an array after whitespace', [Buffer.from(' \n\t[1,2]')], json, 'plain'],
  ['a BOM, then an object', [Buffer.from('\uFEFF{"a":"b"}')], json, 'plain'],
  ['a BOM alone', [Buffer.from('\uFEFF')], json, 'plain'],
  ['whitespace alone', [Buffer.from('   ')], json, 'plain'],
  ['a string at the top', [Buffer.from('"text"')], json, 'plain'],
  ['a number at the top', [Buffer.from('12')], json, 'plain'],
  ['broken JSON', [Buffer.from('{"a":')], json, 'plain'],
  [
    'a character cut between two reads',
    [Buffer.from('{"a":"\u00fc'), Buffer.from('\u20ac"}')],
    json,
    'plain',
  ],
  [
    'a stated UTF-8 charset',
    [Buffer.from('{"a":1}')],
    { 'content-type': 'application/json; charset=UTF-8' },
    'plain',
  ],
  [
    'another charset',
    [Buffer.from('{"a":1}')],
    { 'content-type': 'application/json; charset=latin1' },
    'body-parser',
  ],
  ['a +json type', [Buffer.from('{"a":1}')], { 'content-type': 'application/ld+json' }, 'body-parser'],
  ['a gzip body', [gzipSync('{"a":1}')], { ...json, 'content-encoding': 'gzip' }, 'body-parser'],
  ['an unknown encoding', [Buffer.from('{"a":1}')], { ...json, 'content-encoding': 'br2' }, 'body-parser'],
  ['a body over the limit', [Buffer.from(`{"a":"${'x'.repeat(LIMIT)}"}`)], json, 'body-parser'],
];

describe('plainJsonBodies', () => {
  it.each(cases)('reads %s as body-parser does', async (_name, pieces, headers, reader) => {
    const full = await send('/full', pieces, headers);
    const plain = await send('/plain', pieces, headers);
    expect(plain.answer).toEqual(full.answer);
    expect(plain.readBy).toBe(reader);
  });

  it('parses the common case, and refuses what is not an object or an array', async () => {
    expect((await send('/plain', [Buffer.from('{"a":"\u00fc\u20ac"}')], json)).answer).toEqual({
      body: { a: '\u00fc\u20ac' },
    });
    expect((await send('/plain', [Buffer.from('"text"')], json)).answer).toEqual({
      status: 400,
      type: 'entity.parse.failed',
    });
  });
});
