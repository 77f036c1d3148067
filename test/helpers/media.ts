import http from 'node:http';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { MediaAsset } from '../../src/media/media.entity';
import type { TestApp } from './app';

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** A real PNG image (grey gradient) of the given size. */
export function pngBytes(width = 8, height = 8): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  const rows = Buffer.alloc((width + 1) * height);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) rows[y * (width + 1) + 1 + x] = (x * 255) / width;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** Uploads through `POST /uploads/upload`; answers the parsed body and status. */
export async function uploadFile(
  t: TestApp,
  auth: string,
  file: Buffer,
  filename = 'image.png',
  tags?: string,
): Promise<{ status: number; body: { media: { id: string; url: string }; base_url: string } }> {
  const req = t.http().post('/uploads/upload').set('authorization', auth);
  if (tags !== undefined) req.field('tags', tags);
  const res = await req.attach('file', file, filename);
  return { status: res.status, body: res.body };
}

/** Every media row, whatever its status, and every file in the local media directory. */
export async function storedMedia(t: TestApp): Promise<{ rows: MediaAsset[]; files: string[] }> {
  const rows = await t.runtime.orm.em.fork().find(MediaAsset, {});
  const files = await readdir(path.join(t.config.dataDir, 'media')).catch(() => []);
  return { rows, files };
}

/** A multipart body around one file, for raw HTTP requests. */
export function multipartBody(
  boundary: string,
  file: Buffer,
  filename: string,
): { head: Buffer; tail: Buffer } {
  return {
    head: Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
        'Content-Type: application/octet-stream\r\n\r\n',
    ),
    tail: Buffer.from(`\r\n--${boundary}--\r\n`),
  };
}

/** Starts a raw chunked upload (no Content-Length) and gives the request to drive by hand. */
export function rawUpload(t: TestApp, auth: string, boundary: string): http.ClientRequest {
  return http.request(`${t.url}/uploads/upload`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
  });
}

export async function until<T>(
  probe: () => Promise<T>,
  ok: (v: T) => boolean,
  timeoutMs = 10000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}
