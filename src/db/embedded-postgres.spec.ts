import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { closedToOthers } from './embedded-postgres';

describe('closedToOthers', () => {
  const base = mkdtempSync(path.join(os.tmpdir(), 'closed-'));
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it('names the first directory other users may not pass through', () => {
    const open = path.join(base, 'open');
    const shut = path.join(open, 'shut');
    mkdirSync(path.join(shut, 'data'), { recursive: true });
    chmodSync(base, 0o755);
    chmodSync(open, 0o755);
    chmodSync(shut, 0o700);
    expect(closedToOthers([path.join(shut, 'data')])).toBe(shut);
    chmodSync(shut, 0o711);
    expect(closedToOthers([path.join(shut, 'data')])).toBeNull();
  });
});
