/** Server-sent events as a client reads them. */
export interface Sse {
  id: string;
  event: string;
  data: { job_id: string; status: string; from?: string | null; stream?: string; line?: string };
}

/**
 * Opens an event stream at `url` and reads events until `stop` says so or the server ends it.
 * Parses `text/event-stream` as the HTML specification says (fields up to a blank line).
 */
export async function readEvents(
  url: string,
  auth: string | undefined,
  opts: { lastEventId?: string; stop?: (events: Sse[]) => boolean; opened?: () => void } = {},
): Promise<{ status: number; type: string | null; events: Sse[] }> {
  const controller = new AbortController();
  const headers: Record<string, string> = {};
  if (auth) headers.authorization = auth;
  if (opts.lastEventId) headers['last-event-id'] = opts.lastEventId;
  const res = await fetch(url, { headers, signal: controller.signal });
  const events: Sse[] = [];
  if (res.status !== 200 || !res.body)
    return { status: res.status, type: res.headers.get('content-type'), events };
  opts.opened?.();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields = Object.fromEntries(
          block
            .split('\n')
            .filter((l) => l && !l.startsWith(':'))
            .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]),
        );
        if (fields.data === undefined) continue;
        events.push({ id: fields.id, event: fields.event, data: JSON.parse(fields.data) });
        if (opts.stop?.(events)) {
          controller.abort();
          return { status: 200, type: res.headers.get('content-type'), events };
        }
      }
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') throw err;
  }
  return { status: 200, type: res.headers.get('content-type'), events };
}
