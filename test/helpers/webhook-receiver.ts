import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the receiver answers one request with. */
export type Behaviour =
  | { status: number; retryAfter?: string; body?: string }
  /** Never answers (the sender's timeout must end the attempt). */
  | { hang: true };

export interface Received {
  at: number;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** What it answered (null: it hung). */
  answered: number | null;
}

/**
 * A webhook receiver on a real port: records every request, answers each with the next behaviour
 * planned for its path (200 when none is left; per path, so a late request of another test
 * cannot take a plan), and checks signatures with its own implementation of
 * Standard Webhooks (below), independent of the service's signer.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  private readonly plans = new Map<string, Behaviour[]>();
  private readonly waiters: (() => void)[] = [];
  private readonly hanging = new Set<http.ServerResponse>();

  private constructor(
    private readonly server: http.Server,
    readonly port: number,
  ) {}

  static async start(port = 0): Promise<WebhookReceiver> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    const receiver = new WebhookReceiver(server, (server.address() as AddressInfo).port);
    server.on('request', (req, res) => receiver.handle(req, res));
    return receiver;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** The answers of the next requests to `path`, in order. */
  answer(path: string, ...behaviours: Behaviour[]): void {
    this.plans.set(path, [...(this.plans.get(path) ?? []), ...behaviours]);
  }

  /** Requests to `path`. */
  to(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Resolves once `done` holds for the requests received so far. */
  async until(done: (received: Received[]) => boolean, timeoutMs = 60_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    while (!done(this.received)) {
      if (Date.now() > deadline)
        throw new Error(
          `receiver: still waiting; got ${JSON.stringify(this.received.map((r) => [r.path, r.answered]))}`,
        );
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 250);
      });
    }
    return this.received;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      const behaviour = this.plans.get(path)?.shift() ?? { status: 200 };
      const record: Received = {
        at: Date.now(),
        path,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        answered: 'hang' in behaviour ? null : behaviour.status,
      };
      this.received.push(record);
      if ('hang' in behaviour) this.hanging.add(res);
      else {
        if (behaviour.retryAfter) res.setHeader('retry-after', behaviour.retryAfter);
        res.statusCode = behaviour.status;
        res.end(behaviour.body ?? (behaviour.status < 300 ? 'ok' : 'not now'));
      }
      for (const wake of this.waiters.splice(0)) wake();
    });
  }
}

/**
 * Verifies a Standard Webhooks signature, written from the specification: the secret is base64
 * after `whsec_`; the signed content is `id.timestamp.body`; the header holds space-separated
 * `v1,<base64 HMAC-SHA256>` entries, any of which may match; the timestamp is within 5 minutes.
 */
export function verifySignature(secret: string, r: Pick<Received, 'headers' | 'body'>): boolean {
  const id = r.headers['webhook-id'];
  const timestamp = r.headers['webhook-timestamp'];
  const header = r.headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof header !== 'string') return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${r.body}`).digest();
  return header.split(' ').some((entry) => {
    const [version, sig] = entry.split(',');
    const given = Buffer.from(sig ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}
