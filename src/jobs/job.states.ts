export type JobStatus = 'queued' | 'starting' | 'running' | 'succeeded' | 'failed' | 'canceled';

export const TERMINAL: readonly JobStatus[] = ['succeeded', 'failed', 'canceled'];

/** The states a job may come from to reach each state; transitions never go back. */
export const FROM: Record<JobStatus, readonly JobStatus[]> = {
  queued: [],
  starting: ['queued'],
  running: ['starting'],
  succeeded: ['running'],
  failed: ['starting', 'running'],
  canceled: ['queued', 'starting', 'running'],
};

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL.includes(status);
}
