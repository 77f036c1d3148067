import { Router, type Request, type Response } from 'express';
import { buffer } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import sharp from 'sharp';
import { AppError } from '../common/errors';
import { sendError } from '../http/http.helpers';
import type { ByteRange } from '../storage/storage.port';
import type { ApiDoc } from '../http/openapi/openapi.docs';
import type { MediaAsset } from './media.entity';
import type { MediaService } from './media.service';

/**
 * The single range of a `Range: bytes=...` header, 'unsatisfiable', or null to serve the whole
 * file (no header, another unit, or several ranges: answering those in full is allowed).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | null {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}

const fileAnswer = (description: string) => ({
  description,
  headers: {
    ETag: { description: 'the SHA-256 of the file', schema: { type: 'string' } },
    'Content-Range': { description: 'with 206', schema: { type: 'string' } },
  },
  content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } },
});

export const mediaFileDoc: ApiDoc = {
  method: 'get',
  path: '/media/:file',
  operationId: 'GetMediaFile',
  summary: 'A media file (`<id>.<ext>`, the `media_key` of the media lists), public and immutable; HEAD too',
  security: 'none',
  responses: {
    200: fileAnswer('the file'),
    206: fileAnswer('the part of `Range: bytes=...`'),
    304: { description: 'not modified (`If-None-Match`)' },
  },
};

/** Preview widths (`?w=`): a fixed few, so a client cannot make the service resize at any size. */
export const PREVIEW_WIDTHS = [128, 256, 512] as const;
/** Images sharp reads; others (and SVG, which could be large to render) are served as they are. */
const PREVIEWABLE = /^image\/(png|jpeg|webp|gif|avif|tiff)$/;
/** Bound on the decoded size of an image made into a preview (about 64 megapixels). */
const PREVIEW_MAX_PIXELS = 64_000_000;
/** Larger originals are not read into memory for a preview: the original is served. */
const PREVIEW_MAX_BYTES = 50 * 1024 * 1024;

/**
 * A small WebP preview of an image, made on the fly (docs/media.md, "Previews"): the original is
 * read once, decoded within a pixel bound and scaled down (never up). Null when the file is not
 * an image sharp can read: the caller serves the original.
 */
async function previewOf(media: MediaService, asset: MediaAsset, width: number): Promise<Buffer | null> {
  const stream = await media.read(asset);
  if (!stream) return null;
  try {
    return await sharp(await buffer(stream), { limitInputPixels: PREVIEW_MAX_PIXELS, animated: false })
      .rotate()
      .resize({ width, withoutEnlargement: true })
      .webp({ quality: 80 })
      .toBuffer();
  } catch {
    return null;
  }
}

/** `{cdn_url}/media/<id>.<ext>` served from this process: public, immutable, ranged. */
export function mediaFileRoutes(media: MediaService): Router {
  const router = Router();
  const serve = async (req: Request, res: Response) => {
    const asset = await media.findServable(String(req.params.file));
    if (!asset) return sendError(req, res, AppError.notFound('file'));
    if (req.query.w !== undefined) {
      const width = Number(req.query.w);
      if (!PREVIEW_WIDTHS.includes(width as (typeof PREVIEW_WIDTHS)[number]))
        return sendError(req, res, AppError.validation({ w: `must be one of ${PREVIEW_WIDTHS.join(', ')}` }));
      const previewable = PREVIEWABLE.test(asset.contentType) && asset.size <= PREVIEW_MAX_BYTES;
      const previewTag = `"${asset.sha256}-w${width}"`;
      const previewHeaders = () => {
        res.setHeader('ETag', previewTag);
        res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
        res.setHeader('X-Content-Type-Options', 'nosniff');
        res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
        res.type('image/webp');
      };
      // Checked before any work: the tag names the original's bytes and the width, and a client
      // holds it only from a preview made of those very bytes, so nothing is read or resized.
      if (previewable && req.headers['if-none-match']?.split(',').some((t) => t.trim() === previewTag)) {
        previewHeaders();
        return void res.status(304).end();
      }
      const preview = previewable ? await previewOf(media, asset, width) : null;
      if (preview) {
        previewHeaders();
        res.setHeader('Content-Length', String(preview.length));
        return void (req.method === 'HEAD' ? res.end() : res.end(preview));
      }
    }
    const etag = `"${asset.sha256}"`;
    const ifNoneMatch = req.headers['if-none-match'];
    const notModified =
      !!ifNoneMatch && (ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((t) => t.trim() === etag));
    const ifRange = req.headers['if-range'];
    const range =
      notModified || (ifRange && ifRange !== etag) ? null : parseRange(req.headers.range, asset.size);
    const length = range && range !== 'unsatisfiable' ? range.end - range.start + 1 : asset.size;
    // The bytes are opened before any header is set: a missing file must not answer a 404 that
    // carries a year-long cache policy.
    const sendsBody = !notModified && range !== 'unsatisfiable' && req.method !== 'HEAD' && length > 0;
    const stream = sendsBody ? await media.read(asset, range ?? undefined) : null;
    if (sendsBody && !stream) return sendError(req, res, AppError.notFound('file'));
    res.setHeader('ETag', etag);
    res.setHeader('Last-Modified', asset.createdAt.toUTCString());
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.setHeader('Accept-Ranges', 'bytes');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Uploaded content must never run as a page of this origin.
    res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
    res.setHeader('Content-Disposition', `inline; filename*=UTF-8''${encodeURIComponent(asset.imageName)}`);
    res.type(asset.contentType);

    if (notModified) return void res.status(304).end();
    if (range === 'unsatisfiable') {
      res.setHeader('Content-Range', `bytes */${asset.size}`);
      return sendError(
        req,
        res,
        new AppError('RANGE_NOT_SATISFIABLE', 'the requested range is not in the file'),
      );
    }
    res.status(range ? 206 : 200);
    if (range) res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${asset.size}`);
    res.setHeader('Content-Length', String(length));
    if (!stream) return void res.end();
    // A client that goes away mid-file is normal for media players; nothing to report.
    await pipeline(stream, res).catch(() => undefined);
  };
  router.get('/media/:file', serve);
  router.head('/media/:file', serve);
  return router;
}
