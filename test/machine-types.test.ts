import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from './helpers/app';
import { TestIssuer } from './helpers/oidc-issuer';
import { spawnService } from './helpers/process';
import { createTestDatabase } from './helpers/db';

const dir = mkdtempSync(path.join(os.tmpdir(), 'machine-types-'));
function file(name: string, text: string): string {
  const f = path.join(dir, name);
  writeFileSync(f, text);
  return f;
}
const both = file(
  'both.yaml',
  'machine_types:\n  cpu: {}\n  a100:\n    description: one NVIDIA A100\n    slurm: { partition: gpu, gres: "gpu:a100:1" }\n',
);
const onlyCpu = file('cpu.json', JSON.stringify({ machine_types: { cpu: { slurm: { partition: 'cpu' } } } }));

let issuer: TestIssuer;
let databaseUrl: string;
let t: TestApp;
let owner: string;

beforeAll(async () => {
  issuer = await TestIssuer.start();
  databaseUrl = await createTestDatabase();
  t = await startTestApp({ MACHINE_TYPES_FILE: both, LOCAL_EXECUTOR_TRUST: 'any' }, { databaseUrl, issuer });
  owner = `Bearer ${await t.tokenFor('owner')}`;
});
afterAll(async () => {
  await t.close();
  await issuer.stop();
});

const model = (machineType: string) => ({
  name: 'gpu model',
  container: 'acme/upscale:1',
  command: 'true {args}',
  args: {},
  machine_type: machineType,
});

describe('with MACHINE_TYPES_FILE', () => {
  it('refuses a model naming a machine type it does not define, on create and update', async () => {
    const created = await t.http().post('/api/v1/models').set('authorization', owner).send(model('h100'));
    expect(created.status).toBe(400);
    expect(created.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { machineType: 'must be one of the machine types of this service: cpu, a100' },
    });
    const ok = await t.http().post('/api/v1/models').set('authorization', owner).send(model('a100'));
    expect(ok.status).toBe(201);
    const updated = await t
      .http()
      .put(`/api/v1/models/${ok.body.id}`)
      .set('authorization', owner)
      .send({ machine_type: 'tpu' });
    expect(updated.status).toBe(400);
    expect(updated.body.error.details).toEqual({ machineType: expect.stringContaining('cpu, a100') });
    const gql = await t.gql(
      'mutation ($id: ID!) { updateModel(id: $id, input: { machineType: "tpu" }) { id } }',
      { id: ok.body.id },
      owner,
    );
    expect(gql.body.errors[0].extensions).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { machineType: expect.any(String) },
    });
  });

  it('refuses to deploy a model whose machine type has since been removed, creating nothing', async () => {
    const created = await t.http().post('/api/v1/models').set('authorization', owner).send(model('a100'));
    // The operator removes a100: another process starts with the new file.
    const after = await startTestApp(
      { MACHINE_TYPES_FILE: onlyCpu, LOCAL_EXECUTOR_TRUST: 'any', ROLES: 'api' },
      { databaseUrl, issuer },
    );
    try {
      const res = await after
        .http()
        .post('/api/v1/deployments')
        .set('authorization', owner)
        .send({ name: 'run', model_id: created.body.id, args: {} });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({
        code: 'VALIDATION_FAILED',
        message: 'this model cannot run: its machine type "a100" is not defined any more',
        details: { modelId: expect.stringContaining('its owner must choose another') },
      });
      const deployments = await after.http().get('/api/v1/deployments').set('authorization', owner);
      expect(deployments.body).toEqual([]);
    } finally {
      await after.close();
    }
  });

  it('warns at start about machine types priced but not defined, and defined but not priced', async () => {
    const prices = file(
      'prices.yaml',
      'currency: USD\nper_machine_second: { cpu: "0.00002", h100: "0.002", default: "0.0008" }\nstorage_per_gb_month: "0.02"\n',
    );
    const service = await spawnService({
      DATABASE_URL: await createTestDatabase(),
      OIDC_ISSUER: issuer.issuer,
      DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'machine-types-data-')),
      ROLES: 'api',
      MACHINE_TYPES_FILE: both,
      PRICES_FILE: prices,
    });
    try {
      const lines = service.output().split('\n');
      expect(lines.find((l) => l.includes('priced (PRICES_FILE) but not defined'))).toContain(
        '"machineTypes":["h100"]',
      );
      expect(lines.find((l) => l.includes('defined (MACHINE_TYPES_FILE) but not priced'))).toContain(
        '"machineTypes":["a100"]',
      );
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });
});
