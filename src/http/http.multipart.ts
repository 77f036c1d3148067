import { Readable, Writable } from 'node:stream';

/**
 * A streaming `multipart/form-data` reader for uploads, written for speed: boundaries are found
 * with Buffer.indexOf (native, several GB/s) and a file's bytes go on as slices of the request's
 * own chunks, never copied. busboy's JavaScript Boyer-Moore search cost a fifth of the upload's
 * main-thread time (docs/performance-history.md, "Media"). It keeps busboy's events and limits for
 * the parts the upload route uses: 'field', 'file', 'filesLimit', 'fieldsLimit', 'partsLimit',
 * 'error', 'close'.
 */
export interface MultipartLimits {
  files: number;
  fields: number;
  parts: number;
  /** Bytes of a field's value; longer values are cut and reported `valueTruncated`. */
  fieldSize: number;
  /** Header lines of one part. */
  headerPairs: number;
}

export interface MultipartForm extends Writable {
  on(event: 'field', l: (name: string, value: string, info: { valueTruncated: boolean }) => void): this;
  on(event: 'file', l: (name: string, stream: Readable, info: { filename: string }) => void): this;
  on(event: 'filesLimit' | 'fieldsLimit' | 'partsLimit' | 'close', l: () => void): this;
  on(event: 'error', l: (err: Error) => void): this;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  on(event: string | symbol, l: (...args: any[]) => void): this;
}

/** The boundary of a multipart/form-data Content-Type, or null. */
export function boundaryOf(contentType: string | undefined): string | null {
  const m = /^multipart\/form-data\s*;(?:.*;)?\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(
    contentType ?? '',
  );
  return m ? (m[1] ?? m[2]) : null;
}

/** Throws when the request carries no usable boundary. */
export function multipartForm(contentType: string | undefined, limits: MultipartLimits): MultipartForm {
  const boundary = boundaryOf(contentType);
  if (!boundary) throw new Error('multipart/form-data without a boundary');
  return new Form(boundary, limits);
}

const CRLF = Buffer.from('\r\n');
const HEADERS_END = Buffer.from('\r\n\r\n');
/** A part's header block, as Node bounds a request's headers. */
const MAX_HEADER_BYTES = 16 * 1024;

type State = 'delimiter' | 'headers' | 'body' | 'done';
/** Where a body's bytes go: a file's stream, a field's value, or nowhere (preamble, skipped parts). */
type Sink =
  | { kind: 'file'; stream: FilePart }
  | { kind: 'field'; name: string; chunks: Buffer[]; size: number; cut: boolean }
  | null;

class FilePart extends Readable {
  constructor(private readonly onRead: () => void) {
    super({ highWaterMark: 1024 * 1024 });
  }
  override _read(): void {
    this.onRead();
  }
}

class Form extends Writable {
  /** CRLF "--" boundary: what ends every part (the first one is found after a CRLF put in front). */
  private readonly delimiter: Buffer;
  private state: State = 'body';
  private sink: Sink = null;
  /** Bytes kept across chunks: a possible start of the delimiter, or an unfinished header block. */
  private carry: Buffer | null = null;
  private files = 0;
  private fields = 0;
  private parts = 0;
  private waiting: (() => void) | null = null;

  constructor(
    boundary: string,
    private readonly limits: MultipartLimits,
  ) {
    super({ highWaterMark: 1024 * 1024 });
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    this.carry = CRLF; // the body may start with the delimiter itself
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    try {
      this.feed(chunk);
    } catch (err) {
      return done(err as Error);
    }
    // A file reader that wants no more holds the request until it reads again.
    if (
      this.sink?.kind === 'file' &&
      this.sink.stream.readableLength >= this.sink.stream.readableHighWaterMark
    )
      this.waiting = () => done();
    else done();
  }

  override _final(done: (err?: Error | null) => void): void {
    done(this.state === 'done' ? null : new Error('unexpected end of form'));
  }

  override _destroy(err: Error | null, done: (err: Error | null) => void): void {
    const sink = this.sink;
    this.sink = null;
    if (sink?.kind === 'file' && !sink.stream.readableEnded)
      sink.stream.destroy(err ?? new Error('unexpected end of form'));
    done(err);
  }

  private feed(input: Buffer): void {
    const carried = this.carry;
    this.carry = null;
    if (!carried) return this.scan(input);
    if (this.state !== 'body' || input.length < this.delimiter.length) {
      // A header block or a delimiter's end being read: small, joined.
      return this.scan(Buffer.concat([carried, input]));
    }
    // A delimiter's possible start: look across the seam only, then take the chunk as it is.
    const seam = Buffer.concat([carried, input.subarray(0, this.delimiter.length - 1)]);
    const at = seam.indexOf(this.delimiter);
    if (at >= 0 && at < carried.length) {
      this.emitBody(carried.subarray(0, at));
      this.endPart();
      this.state = 'delimiter';
      return this.scan(input.subarray(at + this.delimiter.length - carried.length));
    }
    this.emitBody(carried);
    this.scan(input);
  }

  private scan(chunk: Buffer): void {
    let pos = 0;
    while (pos < chunk.length && this.state !== 'done') {
      if (this.state === 'body') {
        const at = chunk.indexOf(this.delimiter, pos);
        if (at < 0) {
          // Hold back a tail that could begin the delimiter; pass on the rest as it is.
          const keep = this.delimiterStart(chunk, Math.max(pos, chunk.length - this.delimiter.length + 1));
          this.emitBody(chunk.subarray(pos, keep));
          if (keep < chunk.length) this.carry = chunk.subarray(keep);
          return;
        }
        this.emitBody(chunk.subarray(pos, at));
        this.endPart();
        pos = at + this.delimiter.length;
        this.state = 'delimiter';
      } else if (this.state === 'delimiter') {
        // After a delimiter: "--" ends the form; otherwise optional whitespace, then CRLF.
        const rest = chunk.subarray(pos);
        if (rest.length < 2) return void (this.carry = rest);
        if (rest[0] === 45 && rest[1] === 45) {
          this.state = 'done';
          return;
        }
        const eol = rest.indexOf(CRLF);
        if (eol < 0) {
          if (rest.length > 256) throw new Error('malformed multipart delimiter');
          return void (this.carry = rest);
        }
        if (!/^[ \t]*$/.test(rest.toString('latin1', 0, eol)))
          throw new Error('malformed multipart delimiter');
        pos += eol + 2;
        this.state = 'headers';
      } else {
        const rest = chunk.subarray(pos);
        // The blank line may follow no header at all.
        const end = rest[0] === 13 && rest[1] === 10 ? -2 : rest.indexOf(HEADERS_END);
        if (end === -1) {
          if (rest.length > MAX_HEADER_BYTES) throw new Error('multipart part header too large');
          return void (this.carry = rest);
        }
        this.startPart(end === -2 ? '' : rest.toString('latin1', 0, end));
        pos += end === -2 ? 2 : end + 4;
        this.state = 'body';
      }
    }
  }

  /** Where, from `from` on, the chunk's end could be the start of a delimiter (else its length). */
  private delimiterStart(chunk: Buffer, from: number): number {
    for (let cr = chunk.indexOf(13, from); cr >= 0; cr = chunk.indexOf(13, cr + 1))
      if (this.delimiter.subarray(0, chunk.length - cr).equals(chunk.subarray(cr))) return cr;
    return chunk.length;
  }

  private emitBody(bytes: Buffer): void {
    const sink = this.sink;
    if (!bytes.length || !sink) return;
    if (sink.kind === 'file') {
      sink.stream.push(bytes);
      return;
    }
    if (sink.cut) return;
    const room = this.limits.fieldSize - sink.size;
    const taken = bytes.length > room ? bytes.subarray(0, room) : bytes;
    sink.chunks.push(taken);
    sink.size += taken.length;
    if (bytes.length > room) sink.cut = true;
  }

  private endPart(): void {
    const sink = this.sink;
    this.sink = null;
    if (!sink) return;
    if (sink.kind === 'file') sink.stream.push(null);
    else
      this.emit('field', sink.name, Buffer.concat(sink.chunks).toString('utf8'), {
        valueTruncated: sink.cut,
      });
  }

  private startPart(block: string): void {
    if (++this.parts > this.limits.parts) {
      if (this.parts === this.limits.parts + 1) this.emit('partsLimit');
      return;
    }
    const headers = new Map<string, string>();
    const lines = block ? block.split('\r\n') : [];
    if (lines.length > this.limits.headerPairs) throw new Error('too many multipart part headers');
    for (const line of lines) {
      const colon = line.indexOf(':');
      // No control characters but tabs in a header (a raw NUL in a file name is malformed).
      // eslint-disable-next-line no-control-regex
      if (colon <= 0 || /[\x00-\x08\x0a-\x1f\x7f]/.test(line))
        throw new Error('malformed multipart part header');
      const name = line.slice(0, colon).trim().toLowerCase();
      if (!headers.has(name)) headers.set(name, line.slice(colon + 1).trim());
    }
    const disposition = parseDisposition(headers.get('content-disposition'));
    if (!disposition) return; // not a form field: skipped, as busboy does
    const type = (headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
    const filename = disposition.filename;
    if (filename !== undefined || type === 'application/octet-stream') {
      if (++this.files > this.limits.files) {
        if (this.files === this.limits.files + 1) this.emit('filesLimit');
        return;
      }
      const stream = new FilePart(() => {
        const go = this.waiting;
        this.waiting = null;
        go?.();
      });
      this.sink = { kind: 'file', stream };
      this.emit('file', disposition.name, stream, { filename: filename ?? '' });
    } else {
      if (++this.fields > this.limits.fields) {
        if (this.fields === this.limits.fields + 1) this.emit('fieldsLimit');
        return;
      }
      this.sink = { kind: 'field', name: disposition.name, chunks: [], size: 0, cut: false };
    }
  }
}

/**
 * `form-data; name="x"; filename="y"` (quoted or not; `filename*` in
 * RFC 5987 form wins). Values are read as UTF-8, as browsers send them. Null when not form-data.
 */
export function parseDisposition(header: string | undefined): { name: string; filename?: string } | null {
  if (!header) return null;
  const semi = header.indexOf(';');
  if ((semi < 0 ? header : header.slice(0, semi)).trim().toLowerCase() !== 'form-data') return null;
  const params = new Map<string, string>();
  // Browsers send quotes in names as %22 and backslashes as they are (a Windows path): no escapes.
  const param = /;\s*([^\s=;]+)\s*=\s*(?:"([^"]*)"|([^\s;]*))/g;
  for (let m = param.exec(header); m; m = param.exec(header)) {
    const key = m[1].toLowerCase();
    if (!params.has(key)) params.set(key, m[2] ?? m[3]);
  }
  const name = params.get('name');
  const plain = params.get('filename');
  const extended = /^([\w!#$%&+^`{}~-]+)'[^']*'(.*)$/.exec(params.get('filename*') ?? '');
  const filename = extended
    ? percentDecoded(extended[2]).toString(/^utf-?8$/i.test(extended[1]) ? 'utf8' : 'latin1')
    : plain === undefined
      ? undefined
      : utf8(plain);
  return {
    name: name === undefined ? '' : utf8(name),
    filename: filename === undefined ? undefined : basename(filename),
  };
}

/** The bytes of a percent-encoded value (RFC 5987). */
function percentDecoded(value: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const hex = value[i] === '%' ? /^[0-9a-f]{2}$/i.exec(value.slice(i + 1, i + 3)) : null;
    if (hex) {
      bytes.push(parseInt(hex[0], 16));
      i += 2;
    } else bytes.push(value.charCodeAt(i) & 0xff);
  }
  return Buffer.from(bytes);
}

/** Header text is read as latin1 (one char per byte); its bytes were UTF-8. */
function utf8(latin1: string): string {
  return Buffer.from(latin1, 'latin1').toString('utf8');
}

/** The last path segment; `.` and `..` are no name (as busboy does). */
function basename(name: string): string {
  const base = name.slice(Math.max(name.lastIndexOf('/'), name.lastIndexOf('\\')) + 1);
  return base === '.' || base === '..' ? '' : base;
}
