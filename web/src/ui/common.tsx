import type { ReactNode } from 'react';
import type { JobStatus } from '../generated/graphql';

/** A job's state in words, as the API's REST side says them. */
export const statusWord = (s: JobStatus) => s.toLowerCase();
export const isTerminal = (s: JobStatus) => s === 'SUCCEEDED' || s === 'FAILED' || s === 'CANCELED';

export function StatusBadge({ status }: { status: JobStatus }) {
  return <span className={`status status-${statusWord(status)}`}>{statusWord(status)}</span>;
}

export function ErrorNote({ children }: { children: ReactNode }) {
  return children ? (
    <p className="error" role="alert">
      {children}
    </p>
  ) : null;
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" aria-busy="true">
      Loading {what}…
    </p>
  );
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
export const when = (iso: string | null | undefined) => (iso ? dateTime.format(new Date(iso)) : '—');

export function bytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

export const seconds = (s: number | null | undefined) =>
  s === null || s === undefined ? '—' : `${s.toFixed(2)} s`;

/** Tags typed as text: comma-separated, trimmed, no empties. */
export const parseTags = (text: string) =>
  text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
