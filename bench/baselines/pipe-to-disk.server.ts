/**
 * Baseline: a bare node:http server piping each request body to a file.
 *
 * With HASH_BESIDE=1 it is the ceiling of any server that must also take the SHA-256 of what it
 * receives: while the body is piped, a second thread (started before any timing) hashes as many
 * bytes of memory as the request announces, and the answer waits for both. No bytes are copied
 * or handed over and the hash may run ahead of the body, so no real implementation can be faster
 * on the same machine.
 */
import { createWriteStream } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Worker } from 'node:worker_threads';

const HASHER = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const block = Buffer.alloc(1024 * 1024, 7);
parentPort.on('message', (bytes) => {
  const h = createHash('sha256');
  for (let done = 0; done < bytes; done += 65536) h.update(block.subarray(done % block.length, (done % block.length) + Math.min(65536, bytes - done)));
  parentPort.postMessage(h.digest('hex'));
});`;

const dir = process.env.DATA_DIR!;
const hasher = process.env.HASH_BESIDE ? new Worker(HASHER, { eval: true }) : null;
/** One request at a time (the bench's uploads are sequential): the next message is its digest. */
const hashed = (bytes: number) =>
  hasher ? new Promise<unknown>((resolve) => hasher.once('message', resolve).postMessage(bytes)) : null;

let n = 0;
http
  .createServer((req, res) => {
    if (req.url === '/readyz') return void res.end('{}');
    const file = path.join(dir, `upload-${n++}.bin`);
    Promise.all([
      pipeline(req, createWriteStream(file, { highWaterMark: 1024 * 1024 })),
      hashed(Number(req.headers['content-length'] ?? 0)),
    ]).then(
      () => res.end('{}'),
      () => {
        res.statusCode = 500;
        res.end();
      },
    );
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
