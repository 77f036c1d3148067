import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new signing secret as Standard Webhooks writes them: `whsec_` and 32 random bytes in base64. */
export function newSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

/**
 * The `webhook-signature` value of a message (Standard Webhooks): `v1,` and the base64
 * HMAC-SHA256 of `id.timestamp.body` under the secret's bytes, for each secret (a rotated secret
 * signs too for a while, so receivers can switch), separated by spaces.
 */
export function signature(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
      return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
    })
    .join(' ');
}
