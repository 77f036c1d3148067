import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, mayReach, RefusedAddress, type AddressPolicy } from './webhook.address';
import { parseRetryAfter } from './webhook.backoff';

/** How much of a receiver's answer is read; the rest is never downloaded. */
const MAX_RESPONSE_BYTES = 4096;
/** How much of it is kept with the attempt. */
const EXCERPT_CHARS = 512;

export interface AttemptOutcome {
  /** `retry`: a timeout, a connection error, 429 or 5xx; `failed`: anything else that is not 2xx. */
  kind: 'delivered' | 'retry' | 'failed';
  responseCode: number | null;
  durationMs: number;
  error: string | null;
  retryAfterMs: number | null;
  responseExcerpt: string | null;
}

export interface SendOptions {
  timeoutMs: number;
  policy: AddressPolicy;
}

/**
 * One POST of a message. Redirects are not followed (a 3xx is a failure), addresses are checked
 * on the connection itself (names resolving to private addresses are refused), the whole attempt
 * is bounded by `timeoutMs`, and at most MAX_RESPONSE_BYTES of the answer are read.
 */
export function sendOnce(
  target: string,
  headers: Record<string, string>,
  body: string,
  opts: SendOptions,
): Promise<AttemptOutcome> {
  const started = Date.now();
  const outcome = (o: Omit<AttemptOutcome, 'durationMs'>): AttemptOutcome => ({
    ...o,
    durationMs: Date.now() - started,
  });
  const url = new URL(target);
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  // Node does not look up an address written in the URL: it is checked here.
  const policyRefuses = isIP(literal) !== 0 && !mayReach(url, literal, opts.policy);
  if (policyRefuses)
    return Promise.resolve(
      outcome({
        kind: 'failed',
        responseCode: null,
        error: `${literal} is an address webhooks may not reach`,
        retryAfterMs: null,
        responseExcerpt: null,
      }),
    );
  const payload = Buffer.from(body);
  return new Promise<AttemptOutcome>((resolve) => {
    let settled = false;
    const finish = (o: AttemptOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(o);
    };
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(url, {
      method: 'POST',
      agent: false,
      lookup: guardedLookup(url, opts.policy),
      headers: { ...headers, 'content-length': String(payload.length), connection: 'close' },
    });
    const timer = setTimeout(() => {
      finish(
        outcome({
          kind: 'retry',
          responseCode: null,
          error: `no answer within ${opts.timeoutMs} ms`,
          retryAfterMs: null,
          responseExcerpt: null,
        }),
      );
    }, opts.timeoutMs);
    req.on('error', (err) =>
      finish(
        outcome({
          kind: err instanceof RefusedAddress ? 'failed' : 'retry',
          responseCode: null,
          error: err.message || (err as NodeJS.ErrnoException).code || 'connection failed',
          retryAfterMs: null,
          responseExcerpt: null,
        }),
      ),
    );
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () => {
        const excerpt = Buffer.concat(chunks).toString('utf8').slice(0, EXCERPT_CHARS);
        const retryable = status === 429 || status >= 500;
        finish(
          outcome({
            kind: status >= 200 && status < 300 ? 'delivered' : retryable ? 'retry' : 'failed',
            responseCode: status,
            error:
              status >= 300 && status < 400
                ? `answered ${status}; redirects are not followed`
                : status >= 300 || status < 200
                  ? `answered ${status}`
                  : null,
            retryAfterMs: retryable ? parseRetryAfter(res.headers['retry-after']) : null,
            responseExcerpt: excerpt || null,
          }),
        );
      };
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= MAX_RESPONSE_BYTES) done();
      });
      res.on('end', done);
      res.on('error', done);
    });
    req.end(payload);
  });
}
