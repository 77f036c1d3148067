/** Baseline: a bare node:http server piping each request body to a file. */
import { createWriteStream } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';

const dir = process.env.DATA_DIR!;
let n = 0;
http
  .createServer((req, res) => {
    if (req.url === '/readyz') return void res.end('{}');
    const file = path.join(dir, `upload-${n++}.bin`);
    pipeline(req, createWriteStream(file, { highWaterMark: 1024 * 1024 })).then(
      () => res.end('{}'),
      () => {
        res.statusCode = 500;
        res.end();
      },
    );
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
