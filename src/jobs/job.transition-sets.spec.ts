import type { Job } from './job.entity';
import { TransitionSets, type SetMove } from './job.transition-sets';

type Call = { to: string; ids: string[]; events: readonly string[] };

/** A writer that answers when told to, recording each set it was given. */
function writer() {
  const calls: Call[] = [];
  const answers: { resolve: (m: SetMove[]) => void; reject: (e: unknown) => void; ids: string[] }[] = [];
  const sets = new TransitionSets(
    (to, moves, events) =>
      new Promise((resolve, reject) => {
        const ids = moves.map((m) => m.jobId);
        calls.push({ to, ids, events });
        answers.push({ resolve, reject, ids });
      }),
  );
  const moved = (ids: string[]) => ids.map((id) => ({ job: { id } as Job, from: 'starting' as const }));
  // Past the moment a few moves wait for company after a set (LINGER_MS).
  const settle = () => new Promise((r) => setTimeout(r, 20));
  return { sets, calls, answers, moved, settle };
}

describe('TransitionSets', () => {
  it('writes a lone move at once, and the moves asked for meanwhile together in the next set', async () => {
    const { sets, calls, answers, moved, settle } = writer();
    const first = sets.request('a', 'running', {}, ['start']);
    await settle();
    expect(calls).toEqual([{ to: 'running', ids: ['a'], events: ['start'] }]);
    const later = ['b', 'c', 'd'].map((id) => sets.request(id, 'running', {}, ['start']));
    await settle();
    expect(calls).toHaveLength(1); // the first set is still being written
    answers[0].resolve(moved(['a']));
    expect((await first)?.job.id).toBe('a');
    await settle();
    expect(calls[1]).toEqual({ to: 'running', ids: ['b', 'c', 'd'], events: ['start'] });
    // One that did not move (canceled meanwhile) is answered null.
    answers[1].resolve(moved(['b', 'd']));
    expect((await Promise.all(later)).map((m) => m?.job.id ?? null)).toEqual(['b', null, 'd']);
  });

  it('writes each target state and set of webhook events in its own statement', async () => {
    const { sets, calls, answers, moved, settle } = writer();
    const all = [
      sets.request('a', 'running', {}, ['start']),
      sets.request('b', 'succeeded', {}, ['completed']),
      sets.request('c', 'succeeded', {}, ['output', 'completed']),
      sets.request('d', 'succeeded', {}, ['completed']),
    ];
    for (let i = 0; i < 3; i++) {
      await settle();
      answers[i].resolve(moved(answers[i].ids));
    }
    await Promise.all(all);
    expect(calls).toEqual([
      { to: 'running', ids: ['a'], events: ['start'] },
      { to: 'succeeded', ids: ['b', 'd'], events: ['completed'] },
      { to: 'succeeded', ids: ['c'], events: ['output', 'completed'] },
    ]);
  });

  it('fails only the moves of a set whose statement failed; the next set is written', async () => {
    const { sets, calls, answers, moved, settle } = writer();
    const failing = sets.request('a', 'running', {}, ['start']);
    await settle();
    const next = sets.request('b', 'running', {}, ['start']);
    answers[0].reject(new Error('the database went away'));
    await expect(failing).rejects.toThrow('the database went away');
    await settle();
    expect(calls[1].ids).toEqual(['b']);
    answers[1].resolve(moved(['b']));
    expect((await next)?.job.id).toBe('b');
  });
});
