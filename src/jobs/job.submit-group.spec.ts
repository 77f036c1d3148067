import type { JobObserver, JobSpec } from '../executors/executor.port';
import { SubmitGroup } from './job.submit-group';

// The coordination alone, over plain functions standing for `submit` and `submitMany`.
const spec = (jobId: string) => ({ jobId }) as JobSpec;
const observer = {} as JobObserver;

function recorder() {
  const calls: { many: string[][]; one: string[] } = { many: [], one: [] };
  return {
    calls,
    one: async (s: JobSpec) => {
      calls.one.push(s.jobId);
      return `one-${s.jobId}`;
    },
    many: async (specs: readonly JobSpec[]) => {
      calls.many.push(specs.map((s) => s.jobId));
      return specs.map((s) => `many-${s.jobId}`);
    },
  };
}

describe('SubmitGroup', () => {
  it('submits once every job has asked, answering each its own id in order', async () => {
    const r = recorder();
    const group = new SubmitGroup(r.one, r.many, 3);
    const a = group.submit(spec('a'), observer);
    const b = group.submit(spec('b'), observer);
    await Promise.resolve();
    expect(r.calls.many).toEqual([]);
    const c = group.submit(spec('c'), observer);
    expect(await Promise.all([a, b, c])).toEqual(['many-a', 'many-b', 'many-c']);
    expect(r.calls).toEqual({ many: [['a', 'b', 'c']], one: [] });
  });

  it('does not wait for a job that left before asking', async () => {
    const r = recorder();
    const group = new SubmitGroup(r.one, r.many, 3);
    const a = group.submit(spec('a'), observer);
    group.leave();
    const c = group.submit(spec('c'), observer);
    expect(await Promise.all([a, c])).toEqual(['many-a', 'many-c']);
    group.leave(); // after sending: nothing changes
    expect(r.calls.many).toEqual([['a', 'c']]);
  });

  it('submits a retry, or a job asking after the group was sent, on its own', async () => {
    const r = recorder();
    const group = new SubmitGroup(r.one, r.many, 1);
    expect(await group.submit(spec('a'), observer)).toBe('many-a');
    expect(await group.submit(spec('a'), observer, true)).toBe('one-a');
    expect(await group.submit(spec('b'), observer)).toBe('one-b');
    expect(r.calls).toEqual({ many: [['a']], one: ['a', 'b'] });
  });

  it('fails every waiting job with the group submission’s error', async () => {
    const group = new SubmitGroup(
      async () => 'x',
      async () => {
        throw new Error('unreachable');
      },
      2,
    );
    const both = [group.submit(spec('a'), observer), group.submit(spec('b'), observer)];
    for (const p of both) await expect(p).rejects.toThrow('unreachable');
  });
});
