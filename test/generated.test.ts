import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { MikroORM } from '@mikro-orm/postgresql';
import { openOrm } from '../src/db/orm';
import { entities } from '../src/server/entities';
import { printAppSchema } from '../src/server/schema-printer';
import { createTestDatabase } from './helpers/db';

const root = path.resolve(__dirname, '..');

describe('generated files are committed and current', () => {
  it('schema.graphql matches the code (run `npm run schema`)', () => {
    expect(readFileSync(path.join(root, 'schema.graphql'), 'utf8')).toBe(printAppSchema());
  });

  it('the codegen output matches the operations (run `npm run codegen`)', async () => {
    // `--check` exits non-zero when a generated file would change.
    const bin = path.join(root, 'node_modules', '.bin', 'graphql-codegen');
    await expect(
      promisify(execFile)(bin, ['--config', 'codegen.yml', '--check'], { cwd: root }),
    ).resolves.toBeDefined();
  });

  it('the migrations build exactly the schema the entities describe (run `npm run migration:create`)', async () => {
    const orm: MikroORM = await openOrm({ clientUrl: await createTestDatabase(), entities });
    try {
      const diff = await orm.getSchemaGenerator().getUpdateSchemaSQL({ wrap: false, safe: false });
      expect(diff.trim()).toBe('');
    } finally {
      await orm.close(true);
    }
  });
});
