import type { MikroORM } from '@mikro-orm/postgresql';
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { Owner } from '../common/principal';
import { AppError } from '../common/errors';
import type { IdempotentCreation } from '../common/idempotent-creation';

/** A key and its first answer are kept this long. */
export const KEY_TTL_HOURS = 24;
/** The holder of a key renews its lease while its request runs; a lease that lapses (a crash) frees the key. */
const LEASE_MS = 30_000;
const RENEW_MS = 10_000;
/** How long a repeated request waits for the first one to finish before it is told to come back. */
const WAIT_MS = 30_000;

const KEY = /^[\x21-\x7e]{1,255}$/;

/** An answer as it is replayed. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * The key is this request's: `complete` stores its answer, `release` frees the key (unless
 * something was made under it). `creation` goes to the services that make something; `resumed`:
 * an earlier attempt of this request made something and died before storing its answer.
 */
export interface Claim {
  resumed: boolean;
  creation: IdempotentCreation;
  complete(fingerprint: string, response: StoredResponse): Promise<void>;
  release(): Promise<void>;
}

interface KeyRow {
  id: string;
  fingerprint: string | null;
  status: 'running' | 'done';
  response: Buffer | null;
  /** Its request made something, and is gone (or failed) without storing its answer. */
  orphaned: boolean;
}

export type Begun =
  { kind: 'claimed'; claim: Claim } | { kind: 'done'; fingerprint: string; response: StoredResponse };

/** A fingerprint of a request: what it asked for, independent of JSON key order. */
export function fingerprint(parts: unknown[]): string {
  return createHash('sha256').update(canonicalJson(parts)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value ?? null);
}

/**
 * `Idempotency-Key`: the same key from the same owner within 24 hours answers the first answer
 * again; a different request under it is CONFLICT; concurrent ones wait for the first.
 */
export class IdempotencyService {
  constructor(private readonly orm: MikroORM) {}

  /** Checks the header's value (printable ASCII, at most 255 characters). */
  static validKey(key: string): boolean {
    return KEY.test(key);
  }

  /**
   * Takes the key for this request, or answers what its first request answered. `fp` is the
   * request's fingerprint when it is known before reading the body (JSON requests); a different
   * one is CONFLICT at once. While another request holds the key, this one waits (holding no
   * connection) for its answer, and is CONFLICT after WAIT_MS.
   */
  async begin(owner: Owner, key: string, fp: string | null): Promise<Begun> {
    const em = this.orm.em.fork();
    const keyHash = createHash('sha256').update(key).digest('hex');
    const where = [owner.type, owner.id, keyHash];
    const deadline = Date.now() + WAIT_MS;
    for (let pause = 50; ; pause = Math.min(pause * 2, 1000)) {
      // Expired, or held by a request whose process is gone and that made nothing: free.
      await em.execute(
        `delete from idempotency_keys where owner_type = ? and owner_id = ? and key_hash = ?
         and (created_at < now() - make_interval(hours => ?)
              or (status = 'running' and locked_until < now() and made = '{}'))`,
        [...where, KEY_TTL_HOURS],
      );
      const [taken]: { id: string }[] = await em.execute(
        `insert into idempotency_keys (id, owner_type, owner_id, key_hash, fingerprint, status, locked_until, created_at)
         values (gen_random_uuid(), ?, ?, ?, ?, 'running', now() + make_interval(secs => ?), now())
         on conflict (owner_type, owner_id, key_hash) do nothing returning id`,
        [...where, fp, LEASE_MS / 1000],
      );
      if (taken) return { kind: 'claimed', claim: this.claim(taken.id, key, owner, []) };
      const [row]: KeyRow[] = await em.execute(
        `select id, fingerprint, status, response, locked_until < now() and made <> '{}' as orphaned
         from idempotency_keys where owner_type = ? and owner_id = ? and key_hash = ?`,
        where,
      );
      if (!row) continue; // freed meanwhile
      if (fp && row.fingerprint && row.fingerprint !== fp) throw conflict();
      if (row.status === 'done' && row.response)
        return { kind: 'done', fingerprint: row.fingerprint!, response: open(row.response, key, owner) };
      if (row.orphaned) {
        // This repeat takes the key over and answers what was made, making nothing.
        // Only JSON requests (fingerprinted from the start) record; an upload here is another request.
        if (!fp) throw conflict();
        const [resumed]: { id: string; made: string[] }[] = await em.execute(
          `update idempotency_keys set locked_until = now() + make_interval(secs => ?)
           where id = ? and status = 'running' and locked_until < now() returning id, made`,
          [LEASE_MS / 1000, row.id],
        );
        if (resumed) return { kind: 'claimed', claim: this.claim(resumed.id, key, owner, resumed.made) };
        continue;
      }
      if (Date.now() + pause > deadline)
        throw new AppError(
          'CONFLICT',
          'a request with this Idempotency-Key is still in progress; try again shortly',
          undefined,
          1,
        );
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  /** Removes keys older than 24 hours (the worker's sweeper). */
  async sweep(): Promise<number> {
    const rows = await this.orm.em
      .fork()
      .execute(
        `delete from idempotency_keys where created_at < now() - make_interval(hours => ?) returning id`,
        [KEY_TTL_HOURS],
      );
    return rows.length;
  }

  private claim(id: string, key: string, owner: Owner, made: string[]): Claim {
    const em = this.orm.em.fork();
    const earlier = [...made];
    const renew = setInterval(() => {
      void em
        .execute(
          `update idempotency_keys set locked_until = now() + make_interval(secs => ?) where id = ? and status = 'running'`,
          [LEASE_MS / 1000, id],
        )
        .catch(() => undefined);
    }, RENEW_MS);
    renew.unref();
    return {
      resumed: made.length > 0,
      creation: {
        previous: (kind) => {
          const i = earlier.findIndex((m) => m.startsWith(`${kind}:`));
          return i < 0 ? undefined : earlier.splice(i, 1)[0].slice(kind.length + 1);
        },
        record: (kind, madeId) => ({
          sql: `update idempotency_keys set made = array_append(made, ?) where id = ?`,
          params: [`${kind}:${madeId}`, id],
        }),
      },
      complete: async (fp, response) => {
        clearInterval(renew);
        await em.execute(
          `update idempotency_keys set status = 'done', fingerprint = ?, response = ? where id = ?`,
          [fp, seal(response, key, owner), id],
        );
      },
      release: async () => {
        clearInterval(renew);
        // A key under which something was made stays taken, its lease ended: a repeat answers
        // what was made rather than making it again.
        await em.execute(
          `with freed as (delete from idempotency_keys where id = ? and status = 'running' and made = '{}')
           update idempotency_keys set locked_until = now() where id = ? and status = 'running' and made <> '{}'`,
          [id, id],
        );
      },
    };
  }
}

export function conflict(): AppError {
  return new AppError(
    'CONFLICT',
    'this Idempotency-Key was used for a different request; use a new key for a new request',
  );
}

/** The answer's encryption key: derived from the Idempotency-Key, which only its client knows. */
function keyOf(key: string, owner: Owner): Buffer {
  return Buffer.from(hkdfSync('sha256', key, `${owner.type}:${owner.id}`, 'idempotent-response', 32));
}

function seal(response: StoredResponse, key: string, owner: Owner): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(key, owner), iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(response)), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), data]);
}

function open(sealed: Buffer, key: string, owner: Owner): StoredResponse {
  const decipher = createDecipheriv('aes-256-gcm', keyOf(key, owner), sealed.subarray(0, 12));
  decipher.setAuthTag(sealed.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8'));
}
