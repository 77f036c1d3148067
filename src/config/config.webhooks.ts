import type { Parser } from './config.parser';

/** Webhooks: where deliveries may go, and how long and how many at once (docs/webhooks.md). */

export interface WebhookConfig {
  /** Plain http webhooks allowed (`WEBHOOK_ALLOW_HTTP`); https only otherwise. */
  webhookAllowHttp: boolean;
  /** `host:port` entries webhooks may reach although they are private addresses (tests, own receivers). */
  webhookAllowPrivate: readonly string[];
  /** Bound on each delivery attempt. */
  webhookTimeoutSeconds: number;
  /** Short tasks (webhook deliveries, deadlines) one worker process runs at once. */
  webhookConcurrency: number;
}

export function webhookConfig(p: Parser): WebhookConfig {
  return {
    webhookAllowHttp: p.bool('WEBHOOK_ALLOW_HTTP', false),
    webhookAllowPrivate: webhookAllowPrivate(p),
    webhookTimeoutSeconds: p.int('WEBHOOK_TIMEOUT_SECONDS', 10, 1, 60),
    webhookConcurrency: p.int('WEBHOOK_CONCURRENCY', 4, 1, 256),
  };
}

/** `WEBHOOK_ALLOW_PRIVATE`: `host:port` entries (IPv6 in brackets), lower-cased. */
function webhookAllowPrivate(p: Parser): string[] {
  const entries = p.list('WEBHOOK_ALLOW_PRIVATE').map((e) => e.toLowerCase());
  const bad = entries.filter(
    (e) => !/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+):\d{1,5}$/.test(e) || Number(e.split(':').pop()) > 65535,
  );
  if (bad.length)
    p.problems.push(
      `WEBHOOK_ALLOW_PRIVATE: expected host:port entries ([v6]:port for IPv6), got ${bad.join(', ')}`,
    );
  return entries;
}
