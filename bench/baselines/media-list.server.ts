/**
 * Baseline: a bare node:http + pg handler running the SQL of `GET /api/v1/media` for one owner
 * and answering the same JSON. No authentication, no GraphQL: the floor the service is held to.
 */
import http from 'node:http';
import { Pool } from 'pg';
import { goTime } from '../../src/common/time';

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const ownerId = process.env.OWNER_ID!;
const base = `${process.env.CDN_URL}/`;
const SQL = `select id, image_name, extension, status, type, tags, created_at from media_assets
  where owner_type = 'user' and owner_id = $1 and status = 'live'
  order by created_at desc, id desc limit 51`;

http
  .createServer((req, res) => {
    if (req.url === '/readyz') return void res.end('{}');
    pool.query(SQL, [ownerId]).then(
      ({ rows }) => {
        const media = rows.slice(0, 50).map((r) => ({
          id: r.id,
          image_name: r.image_name,
          media_key: `${base}media/${r.id}.${r.extension}`,
          status: r.status,
          tags: r.tags,
          type: r.type,
          upload_date: goTime(r.created_at),
        }));
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ media, media_key: base }));
      },
      () => {
        res.statusCode = 500;
        res.end();
      },
    );
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
