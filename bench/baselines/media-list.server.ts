/**
 * Baseline: a bare node:http + pg handler running the service's SQL for one owner and answering
 * the same JSON. No authentication, no GraphQL: the floor the service is held to.
 * `/jobs`: the nested shape (50 jobs, each with its model and deployment) in one joined statement.
 * Anything else: the list of 50 media as `GET /api/v1/media` answers it.
 */
import http from 'node:http';
import { Pool } from 'pg';
import { goTime } from '../../src/common/time';

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const ownerId = process.env.OWNER_ID!;
const base = `${process.env.CDN_URL}/`;
const MEDIA = `select id, image_name, extension, status, type, tags, created_at from media_assets
  where owner_type = 'user' and owner_id = $1 and status = 'live'
  order by created_at desc, id desc limit 51`;
const JOBS = `select j.id, j.status, j.created_at, m.id as m_id, m.name as m_name, m.version as m_version,
    m.container as m_container, d.id as d_id, d.name as d_name, d.created_at as d_created_at
  from jobs j join deployments d on d.id = j.deployment_id left join models m on m.id = j.model_id
  where j.owner_type = 'user' and j.owner_id = $1 order by j.created_at desc, j.id desc limit 51`;

type Row = Record<string, unknown>;

function media(rows: Row[]) {
  return {
    media: rows.slice(0, 50).map((r) => ({
      id: r.id,
      image_name: r.image_name,
      media_key: `${base}media/${r.id as string}.${r.extension as string}`,
      status: r.status,
      tags: r.tags,
      type: r.type,
      upload_date: goTime(r.created_at as Date),
    })),
    media_key: base,
  };
}

function jobs(rows: Row[]) {
  const nodes = rows.slice(0, 50).map((r) => ({
    id: r.id,
    status: String(r.status).toUpperCase(),
    createdAt: (r.created_at as Date).toISOString(),
    model: r.m_id ? { id: r.m_id, name: r.m_name, version: r.m_version, container: r.m_container } : null,
    deployment: { id: r.d_id, name: r.d_name, createdAt: (r.d_created_at as Date).toISOString() },
  }));
  return { data: { jobs: { nodes, pageInfo: { hasNextPage: rows.length > 50 } } } };
}

http
  .createServer((req, res) => {
    if (req.url === '/readyz') return void res.end('{}');
    const nested = req.url?.startsWith('/jobs');
    pool.query(nested ? JOBS : MEDIA, [ownerId]).then(
      ({ rows }) => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(nested ? jobs(rows) : media(rows)));
      },
      () => {
        res.statusCode = 500;
        res.end();
      },
    );
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
