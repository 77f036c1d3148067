import express, { type NextFunction, type Request, type Response } from 'express';
import type { FileUpload, Upload } from 'graphql-upload-minimal';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { buffer } from 'node:stream/consumers';
import { httpStatusOf, type AppError } from '../common/errors';
import { graphqlMultipart } from './http.graphql-multipart';

/**
 * The GraphQL multipart reader over real HTTP: the handler after it plays the resolver (awaits
 * each Upload it finds in the operations and reads its bytes); errors answer their status.
 */
let server: Server;
let url: string;

beforeAll(async () => {
  const app = express();
  app.post(
    '/graphql',
    graphqlMultipart({ maxFiles: 2, maxFieldSize: 256 }),
    async (req: Request, res: Response) => {
      const body = req.body as { variables: Record<string, unknown> };
      const files: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(body.variables ?? {})) {
        if (!value || typeof value !== 'object' || !('promise' in value)) continue;
        try {
          const file: FileUpload = await (value as Upload).promise;
          const bytes = await buffer(file.createReadStream());
          files[name] = { filename: file.filename, bytes: bytes.toString() };
        } catch (err) {
          files[name] = { error: (err as AppError).code ?? (err as Error).message };
        }
      }
      res.json({ query: (req.body as { query: string }).query, files });
    },
  );
  app.use((err: AppError, _req: Request, res: Response, _next: NextFunction) => {
    res.status(err.code ? httpStatusOf(err.code) : 500).json({ code: err.code, message: err.message });
  });
  server = app.listen(0);
  await new Promise((r) => server.once('listening', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
});
afterAll(() => new Promise((r) => server.close(r)));

const BOUNDARY = 'spec-boundary';
type Part = [name: string, value: string, filename?: string];

/** A multipart body of `parts` in this order (a file when it has a file name). */
function post(parts: Part[]): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = parts
    .map(
      ([name, value, filename]) =>
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"` +
        (filename ? `; filename="${filename}"\r\nContent-Type: text/plain` : '') +
        `\r\n\r\n${value}\r\n`,
    )
    .join('');
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    body: `${body}--${BOUNDARY}--\r\n`,
  }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }));
}

const operations = (variables: Record<string, unknown>) => JSON.stringify({ query: 'q', variables });

describe('graphqlMultipart', () => {
  it('puts each file at the paths map names and streams its bytes to the handler', async () => {
    const res = await post([
      ['operations', operations({ a: null, b: null, other: 1 })],
      ['map', JSON.stringify({ x: ['variables.a'], y: ['variables.b'] })],
      ['note', 'a field the spec does not name is ignored'],
      ['x', 'first file', 'a.txt'],
      ['y', 'second', 'b.txt'],
    ]);
    expect(res).toEqual({
      status: 200,
      body: {
        query: 'q',
        files: { a: { filename: 'a.txt', bytes: 'first file' }, b: { filename: 'b.txt', bytes: 'second' } },
      },
    });
  });

  it('drops a file map does not name, and rejects a named file that never comes', async () => {
    const res = await post([
      ['operations', operations({ a: null, b: null })],
      ['map', JSON.stringify({ x: ['variables.a'], y: ['variables.b'] })],
      ['z', 'stray', 'z.txt'],
      ['x', 'kept', 'a.txt'],
    ]);
    expect(res.status).toBe(200);
    expect(res.body.files).toEqual({ a: { filename: 'a.txt', bytes: 'kept' }, b: { error: 'BAD_REQUEST' } });
  });

  it.each<[string, Part[], number, RegExp]>([
    [
      'map before operations',
      [
        ['map', '{}'],
        ['operations', operations({})],
      ],
      400,
      /then 'map'/,
    ],
    [
      'a file before map',
      [
        ['operations', operations({ a: null })],
        ['x', 'f', 'x.txt'],
      ],
      400,
      /then 'map'/,
    ],
    [
      'operations not JSON',
      [
        ['operations', '{nope'],
        ['map', '{}'],
      ],
      400,
      /not JSON/,
    ],
    [
      'operations a string',
      [
        ['operations', '"q"'],
        ['map', '{}'],
      ],
      400,
      /object or array/,
    ],
    [
      'map an array',
      [
        ['operations', operations({})],
        ['map', '[]'],
      ],
      400,
      /JSON object/,
    ],
    [
      'a path that is not there',
      [
        ['operations', operations({})],
        ['map', '{"x":["variables.a.b"]}'],
      ],
      400,
      /no place/,
    ],
    [
      'a path to the prototype',
      [
        ['operations', operations({})],
        ['map', '{"x":["__proto__.polluted"]}'],
      ],
      400,
      /no place/,
    ],
    [
      'paths not a list',
      [
        ['operations', operations({})],
        ['map', '{"x":"variables.a"}'],
      ],
      400,
      /list of paths/,
    ],
    [
      'more files in map than allowed',
      [
        ['operations', operations({})],
        ['map', '{"x":[],"y":[],"z":[]}'],
      ],
      413,
      /at most 2/,
    ],
    [
      'a field over its size',
      [
        ['operations', operations({ pad: 'x'.repeat(300) })],
        ['map', '{}'],
      ],
      413,
      /over 256 bytes/,
    ],
    ['no operations', [], 400, /'operations' field is missing/],
    ['no map', [['operations', operations({})]], 400, /'map' field is missing/],
  ])('answers %s, passing nothing on', async (_what, parts, status, message) => {
    const res = await post(parts);
    expect(res.status).toBe(status);
    expect(res.body.message).toMatch(message);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('answers a body without a boundary with 400', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data' },
      body: 'x',
    });
    expect(res.status).toBe(400);
  });

  it('fails the file being read when the form breaks off, and the handler answers', async () => {
    const head =
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${operations({ a: null })}\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"x":["variables.a"]}\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="x"; filename="a.txt"\r\n\r\npartial bytes`;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
      body: head, // ends without a closing delimiter
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { files: Record<string, { error?: string }> };
    expect(body.files.a.error).toBeDefined();
  });
});
