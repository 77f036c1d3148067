/**
 * Expired rows (sessions, login attempts, provider state) are deleted by the process that next
 * writes such a row, at most once per interval: no timer to own, and every process takes part.
 * A failed sweep is harmless (expired rows are refused when read) and is retried next time.
 */
export function sweeper(intervalMs: number, sweep: () => Promise<unknown>): () => void {
  let last = 0;
  return () => {
    if (Date.now() - last < intervalMs) return;
    last = Date.now();
    sweep().catch(() => undefined);
  };
}
