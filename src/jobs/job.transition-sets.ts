import type { Job } from './job.entity';
import type { JobStatus } from './job.states';
import type { TransitionFields } from './job.store';
import type { WebhookEvent } from './job.webhook-events';

export type SetMove = { job: Job; from: JobStatus | null };
type SetTarget = 'running' | 'succeeded';
type Write = (
  to: SetTarget,
  moves: readonly { jobId: string; fields: TransitionFields }[],
  events: readonly WebhookEvent[],
) => Promise<SetMove[]>;

interface Waiting {
  jobId: string;
  fields: TransitionFields;
  resolve: (moved: SetMove | null) => void;
  reject: (err: unknown) => void;
}

/** Jobs per statement, at most. */
const MAX_SET = 500;
/**
 * After a set was written, fewer moves than MIN_SET wait up to LINGER_MS for company: a
 * statement for a few jobs costs almost what one for many does.
 */
const MIN_SET = 16;
const LINGER_MS = 5;

/**
 * Group commit for the transitions of many short jobs (JobStore.transitionSet): the moves asked
 * for while a set is being written go together in the next one, one statement per target state
 * and webhook events. A lone move is written at once (after the current turn of the event loop);
 * right after a set, a few wait a moment (LINGER_MS) for more.
 */
export class TransitionSets {
  private pending = new Map<string, { to: SetTarget; events: readonly WebhookEvent[]; moves: Waiting[] }>();
  private writing = false;

  constructor(private readonly write: Write) {}

  /** Answers the job as moved, or null when it did not move (gone elsewhere meanwhile). */
  request(
    jobId: string,
    to: SetTarget,
    fields: TransitionFields,
    events: readonly WebhookEvent[],
  ): Promise<SetMove | null> {
    return new Promise((resolve, reject) => {
      const key = `${to} ${events.join(',')}`;
      let group = this.pending.get(key);
      if (!group) this.pending.set(key, (group = { to, events, moves: [] }));
      group.moves.push({ jobId, fields, resolve, reject });
      if (!this.writing) {
        this.writing = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    for (let first = true; this.pending.size; first = false) {
      if (!first && this.waitingMoves() < MIN_SET) await new Promise((r) => setTimeout(r, LINGER_MS));
      const groups = [...this.pending.values()];
      this.pending = new Map();
      for (const { to, events, moves } of groups)
        for (let i = 0; i < moves.length; i += MAX_SET) {
          const slice = moves.slice(i, i + MAX_SET);
          try {
            const moved = new Map((await this.write(to, slice, events)).map((m) => [m.job.id, m]));
            for (const w of slice) w.resolve(moved.get(w.jobId) ?? null);
          } catch (err) {
            for (const w of slice) w.reject(err);
          }
        }
    }
    this.writing = false;
  }

  private waitingMoves(): number {
    let n = 0;
    for (const g of this.pending.values()) n += g.moves.length;
    return n;
  }
}
