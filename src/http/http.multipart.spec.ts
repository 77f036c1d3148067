import { randomBytes } from 'node:crypto';
import { boundaryOf, multipartForm, parseDisposition } from './http.multipart';

const BOUNDARY = '----x1b2';
const limits = { files: 1, fields: 4, parts: 6, fieldSize: 64, headerPairs: 8 };

interface Parsed {
  fields: [string, string, boolean][];
  files: { name: string; filename: string; bytes: Buffer }[];
  events: string[];
  error?: string;
}

/** Writes `body` in the given pieces and collects what the form reports. */
function parse(body: Buffer, cuts: number[], opts = limits): Promise<Parsed> {
  const out: Parsed = { fields: [], files: [], events: [] };
  const form = multipartForm(`multipart/form-data; boundary="${BOUNDARY}"`, opts);
  const reading: Promise<void>[] = [];
  form.on('field', (name: string, value: string, info: { valueTruncated: boolean }) =>
    out.fields.push([name, value, info.valueTruncated]),
  );
  form.on('file', (name: string, stream: NodeJS.ReadableStream, info: { filename: string }) => {
    const chunks: Buffer[] = [];
    reading.push(
      new Promise((done) => {
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          out.files.push({ name, filename: info.filename, bytes: Buffer.concat(chunks) });
          done();
        });
        stream.on('error', () => done());
      }),
    );
  });
  for (const e of ['filesLimit', 'fieldsLimit', 'partsLimit']) form.on(e, () => out.events.push(e));
  return new Promise((resolve) => {
    form.on('error', (err: Error) => (out.error = err.message));
    form.on('close', () => void Promise.all(reading).then(() => resolve(out)));
    let at = 0;
    for (const cut of [...cuts, body.length]) {
      form.write(body.subarray(at, cut));
      at = cut;
    }
    form.end();
  });
}

function body(parts: { headers: string[]; content: Buffer }[], preamble = '', epilogue = ''): Buffer {
  const pieces: Buffer[] = [Buffer.from(preamble)];
  for (const p of parts)
    pieces.push(
      Buffer.from(`--${BOUNDARY}\r\n${p.headers.join('\r\n')}\r\n\r\n`),
      p.content,
      Buffer.from('\r\n'),
    );
  pieces.push(Buffer.from(`--${BOUNDARY}--\r\n${epilogue}`));
  return Buffer.concat(pieces);
}

const field = (name: string, value: string) => ({
  headers: [`Content-Disposition: form-data; name="${name}"`],
  content: Buffer.from(value),
});
const file = (content: Buffer, filename = 'a.bin') => ({
  headers: [`Content-Disposition: form-data; name="file"; filename="${filename}"`, 'Content-Type: image/png'],
  content,
});

describe('multipartForm', () => {
  // Bytes that look like the delimiter's start, a CR before it, and the boundary without "--".
  const tricky = Buffer.concat([
    Buffer.from(`a\r\n--${BOUNDARY.slice(0, 5)}\r\r\n-\r\n--x${BOUNDARY}\r`),
    randomBytes(300),
    Buffer.from('\r\n-'),
  ]);
  const form = body(
    [field('tags', 'a,b'), file(tricky, 'x.png'), field('note', 'ünï')],
    'preamble\r\n',
    'epi',
  );

  it('reads fields and the file the same whatever the chunks', async () => {
    for (let cut = 1; cut < form.length; cut++) {
      const parsed = await parse(form, [cut]);
      expect(parsed.error).toBeUndefined();
      expect(parsed.fields).toEqual([
        ['tags', 'a,b', false],
        ['note', 'ünï', false],
      ]);
      expect(parsed.files).toHaveLength(1);
      expect(parsed.files[0].filename).toBe('x.png');
      expect(parsed.files[0].bytes.equals(tricky)).toBe(true);
    }
    const bytewise = await parse(
      form,
      Array.from({ length: form.length - 1 }, (_, i) => i + 1),
    );
    expect(bytewise.files[0].bytes.equals(tricky)).toBe(true);
  });

  it('passes a large file on in order', async () => {
    const big = randomBytes(3 * 1024 * 1024);
    const whole = body([file(big)]);
    const cuts = Array.from({ length: 60 }, (_, i) => Math.floor((whole.length * (i + 1)) / 61) + (i % 7));
    const parsed = await parse(whole, cuts);
    expect(parsed.files[0].bytes.equals(big)).toBe(true);
  });

  it('cuts long fields and reports the limits', async () => {
    const long = await parse(body([field('tags', 'x'.repeat(100))]), []);
    expect(long.fields).toEqual([['tags', 'x'.repeat(64), true]]);
    const twoFiles = await parse(body([file(Buffer.from('1')), file(Buffer.from('2'))]), []);
    expect(twoFiles.events).toEqual(['filesLimit']);
    expect(twoFiles.files.map((f) => f.bytes.toString())).toEqual(['1']);
    const fields = await parse(body(Array.from({ length: 5 }, (_, i) => field(`f${i}`, 'v'))), []);
    expect(fields.events).toEqual(['fieldsLimit']);
    expect(fields.fields).toHaveLength(4);
    const parts = await parse(
      body(Array.from({ length: 7 }, () => ({ headers: [], content: Buffer.from('') }))),
      [],
    );
    expect(parts.events).toEqual(['partsLimit']);
  });

  it('fails on a form that stops early or is malformed', async () => {
    const cut = form.subarray(0, form.length - 20);
    expect((await parse(cut, [])).error).toMatch(/unexpected end of form/);
    const bad = Buffer.from(`--${BOUNDARY}\r\nno colon here\r\n\r\nx\r\n--${BOUNDARY}--`);
    expect((await parse(bad, [])).error).toMatch(/malformed/);
    const nul = Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="f"; filename="\0.png"\r\n\r\nx\r\n--${BOUNDARY}--`,
    );
    expect((await parse(nul, [])).error).toMatch(/malformed/);
    const huge = Buffer.from(`--${BOUNDARY}\r\nX-A: ${'a'.repeat(17 * 1024)}`);
    expect((await parse(huge, [])).error).toMatch(/too large/);
    const manyHeaders = Buffer.from(`--${BOUNDARY}\r\n${'X-A: 1\r\n'.repeat(9)}\r\nx\r\n--${BOUNDARY}--`);
    expect((await parse(manyHeaders, [])).error).toMatch(/too many/);
  });

  it('finds the boundary, quoted or not, among other parameters', () => {
    expect(boundaryOf('multipart/form-data; boundary=abc')).toBe('abc');
    expect(boundaryOf('Multipart/Form-Data; charset=utf-8; boundary="a b:c"')).toBe('a b:c');
    expect(boundaryOf('multipart/form-data')).toBeNull();
    expect(boundaryOf('text/plain; boundary=abc')).toBeNull();
    expect(() => multipartForm('multipart/form-data', limits)).toThrow();
  });

  it('reads names as browsers send them', () => {
    expect(parseDisposition('form-data; name="file"; filename="..\\..\\win\\e.png"')).toEqual({
      name: 'file',
      filename: 'e.png',
    });
    expect(parseDisposition('form-data; name=f; filename="../x/.."')).toEqual({ name: 'f', filename: '' });
    // UTF-8 bytes in the header (read as latin1), and RFC 5987's extended form winning.
    expect(parseDisposition(Buffer.from('form-data; name="f"; filename="ü.txt"').toString('latin1'))).toEqual(
      {
        name: 'f',
        filename: 'ü.txt',
      },
    );
    expect(parseDisposition(`form-data; name="f"; filename="e.txt"; filename*=UTF-8''%E2%82%AC.txt`)).toEqual(
      {
        name: 'f',
        filename: '€.txt',
      },
    );
    expect(parseDisposition('form-data; name="tags"')).toEqual({ name: 'tags', filename: undefined });
    expect(parseDisposition('attachment; filename="x"')).toBeNull();
    expect(parseDisposition(undefined)).toBeNull();
  });
});
