import type { NextFunction, Request, RequestHandler } from 'express';
import type { Readable } from 'node:stream';
import { Upload, type FileUpload } from 'graphql-upload-minimal';
import { AppError } from '../common/errors';
import { multipartForm, type MultipartForm } from './http.multipart';

const SPEC = 'see https://github.com/jaydenseric/graphql-multipart-request-spec';

export interface GraphqlMultipartLimits {
  maxFiles: number;
  /** Bytes of the `operations` and `map` fields each. */
  maxFieldSize: number;
}

/** Path segments that would reach an object's prototype. */
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * GraphQL multipart requests (uploadMedia) read by the parser of `POST /uploads/upload`, so one
 * multipart reader serves both upload paths. The spec's order: `operations`, then `map`, then the
 * files. Each file `map` names becomes an `Upload` (the `Upload` scalar's value) at its paths in the
 * operations, and the request goes on with them as its body once `map` is read: a resolver awaits
 * its file, which is resolved as the file's part begins, and reads the bytes as they arrive. An
 * error before then answers the request; after it, it rejects the files still awaited and ends
 * the one being read, which the resolver answers.
 */
export function graphqlMultipart(limits: GraphqlMultipartLimits): RequestHandler {
  return (req, _res, next) => read(req, next, limits);
}

function read(req: Request, next: NextFunction, limits: GraphqlMultipartLimits): void {
  let form: MultipartForm;
  try {
    form = multipartForm(req.headers['content-type'], {
      files: limits.maxFiles,
      // The spec's two fields; a few others are read and ignored, as its reference server does.
      fields: 8,
      parts: limits.maxFiles + 8,
      fieldSize: limits.maxFieldSize,
      headerPairs: 32,
    });
  } catch {
    return next(new AppError('BAD_REQUEST', 'malformed multipart body (missing boundary?)'));
  }
  let operations: unknown;
  let uploads: Map<string, Upload> | null = null;
  let passedOn = false;
  let failure: AppError | null = null;
  let current: Readable | null = null;
  const taken = new Set<Readable>();

  const fail = (err: AppError) => {
    if (failure) return;
    failure = err;
    if (current && !current.readableEnded) current.destroy(err);
    for (const upload of uploads?.values() ?? []) if (!upload.file) rejectUpload(upload, err);
    req.unpipe(form);
    form.destroy();
    // Later chunks of the body are read and dropped, so the answer can be sent and read.
    setImmediate(() => req.resume());
    if (!passedOn) next(err);
  };

  form.on('field', (name: string, value: string, info: { valueTruncated: boolean }) => {
    if (info.valueTruncated)
      return fail(
        new AppError('PAYLOAD_TOO_LARGE', `the '${name}' field is over ${limits.maxFieldSize} bytes`),
      );
    if (name === 'operations') {
      if (operations !== undefined) return fail(misordered());
      try {
        operations = parseJson(value, 'operations');
      } catch (err) {
        return fail(err as AppError);
      }
      if (typeof operations !== 'object' || operations === null)
        return fail(new AppError('BAD_REQUEST', `'operations' must be a JSON object or array (${SPEC})`));
      return;
    }
    if (name !== 'map') return;
    if (operations === undefined || uploads) return fail(misordered());
    try {
      uploads = placeUploads(operations as object, parseJson(value, 'map'), limits.maxFiles);
    } catch (err) {
      return fail(err as AppError);
    }
    passedOn = true;
    req.body = operations;
    next();
  });
  form.on('file', (name: string, stream: Readable, info: { filename: string }) => {
    current = stream;
    // Its reader sees a failure by reading; one not read (yet) must not crash the process with it.
    stream.on('error', () => undefined);
    if (!uploads) {
      stream.resume();
      return fail(misordered());
    }
    const upload = uploads.get(name);
    // A file `map` does not name is read and dropped, as the spec's reference server does.
    if (!upload || upload.file) return void stream.resume();
    const file: FileUpload = {
      fieldName: name,
      filename: info.filename,
      // The part's own type is the client's claim; the media service sniffs the bytes.
      mimetype: 'application/octet-stream',
      encoding: '7bit',
      createReadStream: () => {
        if (failure) throw failure;
        if (taken.has(stream)) throw new Error('a file is read once: createReadStream() was called again');
        taken.add(stream);
        return stream as unknown as ReturnType<FileUpload['createReadStream']>;
      },
    };
    resolveUpload(upload, file);
  });
  form.on('filesLimit', () =>
    fail(new AppError('PAYLOAD_TOO_LARGE', `at most ${limits.maxFiles} file(s) per request`)),
  );
  form.on('fieldsLimit', () => fail(new AppError('BAD_REQUEST', 'too many form fields')));
  form.on('partsLimit', () => fail(new AppError('BAD_REQUEST', 'too many form parts')));
  form.on('error', () => fail(new AppError('BAD_REQUEST', 'malformed or incomplete multipart body')));
  form.on('close', () => {
    if (operations === undefined)
      return fail(new AppError('BAD_REQUEST', `the 'operations' field is missing (${SPEC})`));
    if (!uploads) return fail(new AppError('BAD_REQUEST', `the 'map' field is missing (${SPEC})`));
    for (const upload of uploads.values())
      if (!upload.file) rejectUpload(upload, new AppError('BAD_REQUEST', 'a file named in map is missing'));
  });
  req.on('close', () => {
    if (!req.complete) fail(new AppError('BAD_REQUEST', 'the upload was interrupted before it was complete'));
  });
  req.pipe(form);
}

const misordered = () =>
  new AppError('BAD_REQUEST', `send 'operations', then 'map', then the files (${SPEC})`);

function parseJson(value: string, field: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw new AppError('BAD_REQUEST', `the '${field}' field is not JSON (${SPEC})`);
  }
}

/** An `Upload` per file `map` names, set at each of its paths in `operations`. */
function placeUploads(operations: object, map: unknown, maxFiles: number): Map<string, Upload> {
  if (typeof map !== 'object' || map === null || Array.isArray(map))
    throw new AppError('BAD_REQUEST', `'map' must be a JSON object (${SPEC})`);
  const entries = Object.entries(map);
  if (entries.length > maxFiles)
    throw new AppError('PAYLOAD_TOO_LARGE', `at most ${maxFiles} file(s) per request`);
  const uploads = new Map<string, Upload>();
  for (const [name, paths] of entries) {
    if (!Array.isArray(paths) || !paths.length)
      throw new AppError('BAD_REQUEST', `map's '${name}' must be a list of paths (${SPEC})`);
    const upload = new Upload();
    uploads.set(name, upload);
    for (const p of paths) setAt(operations, p, upload);
  }
  return uploads;
}

/** Sets `value` at a dotted path of existing objects (`variables.file`, `0.variables.files.1`). */
function setAt(root: object, path: unknown, value: unknown): void {
  const keys = typeof path === 'string' ? path.split('.') : [];
  const bad = () =>
    new AppError('BAD_REQUEST', `map names no place in the operations: ${JSON.stringify(path)}`);
  if (!keys.length || keys.some((k) => !k || FORBIDDEN.has(k))) throw bad();
  let at = root as Record<string, unknown>;
  for (const key of keys.slice(0, -1)) {
    const next = Object.hasOwn(at, key) ? at[key] : undefined;
    if (typeof next !== 'object' || next === null) throw bad();
    at = next as Record<string, unknown>;
  }
  at[keys[keys.length - 1]] = value;
}

/** Upload's settlers, which its type declarations leave out. */
type Settled = Upload & { resolve(file: FileUpload): void; reject(err: Error): void };
const resolveUpload = (u: Upload, file: FileUpload) => (u as Settled).resolve(file);
const rejectUpload = (u: Upload, err: Error) => (u as Settled).reject(err);
