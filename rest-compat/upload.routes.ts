import { Router, type Request, type Response } from 'express';
import type { Readable } from 'node:stream';
import { ownerOf, requirePrincipal, type Principal } from '../src/auth/principal';
import { idempotencyKeyOf, replay, storeAnswer } from '../src/idempotency/idempotency.http';
import {
  conflict,
  fingerprint,
  type Claim,
  type IdempotencyService,
} from '../src/idempotency/idempotency.service';
import { AppError, toAppError } from '../src/common/errors';
import type { Logger } from '../src/common/logger';
import type { MediaAsset } from '../src/media/media.entity';
import type { MediaService } from '../src/media/media.service';
import { sha256Of } from '../src/media/media.meter';
import { sendError, sendJson } from '../src/http/http.helpers';
import { multipartForm, type MultipartForm } from '../src/http/http.multipart';
import { idempotency, type ApiDoc } from '../src/http/openapi/openapi.docs';
import { object, url, uuid } from '../src/http/openapi/json-schema';

/** Room for the multipart framing and the small fields around the file. */
const FORM_OVERHEAD_BYTES = 1024 * 1024;

export const uploadDoc: ApiDoc = {
  method: 'post',
  path: '/uploads/upload',
  operationId: 'UploadMedia',
  summary: 'Upload one file (streamed; at most MAX_UPLOAD_BYTES) with optional comma-separated tags',
  requestBody: {
    required: true,
    content: {
      'multipart/form-data': {
        schema: {
          type: 'object',
          properties: {
            file: {
              type: 'string',
              contentMediaType: 'application/octet-stream',
              description: 'any part name',
            },
            tags: { type: 'string', description: 'comma-separated tags' },
          },
          required: ['file'],
        },
      },
    },
  },
  ...idempotency,
  response: object({ media: object({ id: uuid, url }), base_url: url }),
};

export interface UploadRouteOptions {
  maxUploadBytes: number;
}

/**
 * `POST /uploads/upload`: a byte stream, so it calls the media service directly instead of
 * running a GraphQL document (DESIGN.md). One file part (any name; `file` in the docs) and an
 * optional `tags` field of comma-separated tags, before or after the file.
 */
export function uploadRoutes(
  media: MediaService,
  idempotency: IdempotencyService,
  opts: UploadRouteOptions,
): Router {
  const router = Router();
  router.post('/uploads/upload', async (req: Request, res: Response) => {
    const log = (req.log ?? undefined) as Logger | undefined;
    let claim: Claim | undefined;
    try {
      const principal = requirePrincipal((res.locals.principal as Principal | null) ?? null);
      if (!req.is('multipart/form-data'))
        throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'send the file as multipart/form-data');
      const declared = Number(req.headers['content-length']);
      if (declared > opts.maxUploadBytes + FORM_OVERHEAD_BYTES)
        throw new AppError('PAYLOAD_TOO_LARGE', `the file is larger than ${opts.maxUploadBytes} bytes`);
      const key = idempotencyKeyOf(req);
      if (key !== undefined) {
        // The body is read only once the key is ours (waiting leaves it unread), or to compare
        // it with the first request's, hashed as it streams and never kept.
        const begun = await idempotency.begin(ownerOf(principal), key, null);
        if (begun.kind === 'done') {
          if ((await receive(req, opts.maxUploadBytes, null)).fingerprint !== begun.fingerprint)
            throw conflict();
          return replay(res, begun.response);
        }
        claim = begun.claim;
      }
      const { asset, fingerprint } = await receive(req, opts.maxUploadBytes, { principal, media });
      if (claim) storeAnswer(res, claim, fingerprint);
      sendJson(req, res, 200, {
        media: { id: asset!.id, url: media.urlOf(asset!) },
        base_url: media.baseUrl,
      });
    } catch (err) {
      await claim?.release().catch(() => undefined);
      const { error, unexpected } = toAppError(err);
      if (unexpected) log?.error({ err }, 'unexpected error in upload');
      // Stop reading a body we refused; the connection cannot be reused mid-body.
      if (!req.complete) {
        res.setHeader('Connection', 'close');
        req.unpipe();
        req.resume();
      }
      sendError(req, res, error);
    }
  });
  return router;
}

/**
 * Reads the form: with `store`, the file goes to the media service; without, it is only hashed
 * (a repeated `Idempotency-Key` request, compared with the first). Either way the answer carries
 * the request's fingerprint: the file's SHA-256, its name and the tags as sent.
 */
function receive(
  req: Request,
  maxBytes: number,
  store: { principal: Principal; media: MediaService } | null,
): Promise<{ asset: MediaAsset | null; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    let form: MultipartForm;
    try {
      // The file's size is the media service's to enforce (it sees every byte).
      form = multipartForm(req.headers['content-type'], {
        files: 1,
        fields: 4,
        parts: 6,
        fieldSize: 16 * 1024,
        headerPairs: 32,
      });
    } catch {
      return reject(new AppError('BAD_REQUEST', 'malformed multipart body (missing boundary?)'));
    }
    let tags: string | undefined;
    let filename: string | undefined;
    let file: Readable | undefined;
    let upload: Promise<{ asset: MediaAsset | null; sha256: string }> | undefined;
    let endForm!: () => void;
    let failForm!: (err: AppError) => void;
    // Settles when the whole form has been read; the upload is committed only then.
    const formRead = new Promise<void>((res, rej) => {
      endForm = res;
      failForm = rej;
    });
    formRead.catch(() => undefined); // only an upload in flight waits on it
    let failed = false;
    const fail = (err: AppError) => {
      if (failed) return;
      failed = true;
      failForm(err);
      if (file && !file.readableEnded) file.destroy(err);
      if (!upload) reject(err);
      req.unpipe(form);
    };

    form.on('field', (name: string, value: string, info: { valueTruncated: boolean }) => {
      if (info.valueTruncated) return fail(AppError.validation({ [name]: 'is too long' }));
      if (name === 'tags') tags = value;
    });
    form.on('file', (_name: string, stream: Readable, info: { filename: string }) => {
      file = stream;
      filename = info.filename;
      upload = store
        ? store.media
            .upload(store.principal, { stream, filename: info.filename, tags: formRead.then(() => tags) })
            .then((asset) => ({ asset, sha256: asset.sha256! }))
        : sha256Of(stream, maxBytes).then(async (sha256) => {
            await formRead;
            return { asset: null, sha256 };
          });
      upload.then(
        ({ asset, sha256 }) =>
          resolve({
            asset,
            fingerprint: fingerprint(['POST', '/uploads/upload', filename ?? null, tags ?? null, sha256]),
          }),
        reject,
      );
    });
    form.on('filesLimit', () => fail(new AppError('BAD_REQUEST', 'send one file per request')));
    form.on('fieldsLimit', () => fail(new AppError('BAD_REQUEST', 'too many form fields')));
    form.on('partsLimit', () => fail(new AppError('BAD_REQUEST', 'too many form parts')));
    form.on('error', () => fail(new AppError('BAD_REQUEST', 'malformed or incomplete multipart body')));
    form.on('close', () => {
      if (!upload) return fail(AppError.validation({ file: 'a file part is required' }));
      endForm();
    });
    req.on('close', () => {
      if (!req.complete)
        fail(new AppError('BAD_REQUEST', 'the upload was interrupted before the file was complete'));
    });
    req.pipe(form);
  });
}
