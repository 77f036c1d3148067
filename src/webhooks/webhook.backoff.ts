/** Retryable failures are retried until a message is this old, then it is given up. */
export const GIVE_UP_AFTER_MS = 24 * 3600_000;
const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 10 * 60_000;
/** A receiver's `Retry-After` is honoured up to this. */
const MAX_RETRY_AFTER_MS = 3600_000;

/**
 * How long to wait after failed attempt `attempt` (1-based): about 1 s, doubling, capped at
 * 10 minutes, each with ±25 % jitter so that receivers coming back are not hit all at once;
 * at least what the receiver asked for in `Retry-After`. A receiver back after a minute hears
 * within about a minute, since each wait is about as long as all the waits before it.
 */
export function retryDelayMs(attempt: number, retryAfterMs: number | null, random = Math.random): number {
  const base = Math.min(FIRST_DELAY_MS * 2 ** Math.min(attempt - 1, 30), MAX_DELAY_MS);
  const jittered = Math.round(base * (0.75 + random() * 0.5));
  return Math.max(jittered, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
}

/** `Retry-After` as milliseconds from `now`: delta seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
