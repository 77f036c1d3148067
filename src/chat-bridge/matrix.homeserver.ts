import { createHmac } from 'node:crypto';
import { AppError } from '../common/errors';
import type { Homeserver, MatrixAccount, MatrixRoom } from './homeserver.port';

export interface MatrixHomeserverOptions {
  url: string;
  serverName: string;
  registrationSharedSecret: string;
  timeoutMs?: number;
}

interface MatrixAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** The device whose token a password check replaces each time, so checks do not pile up devices. */
const PASSWORD_CHECK_DEVICE = 'MEDIA_PLATFORM_BRIDGE_LOGIN';

/**
 * Synapse's shared-secret registration API (`/_synapse/admin/v1/register`, which Dendrite serves
 * too) and the Matrix client-server API.
 */
export class MatrixHomeserver implements Homeserver {
  readonly url: string;
  readonly serverName: string;

  constructor(private readonly options: MatrixHomeserverOptions) {
    this.url = options.url;
    this.serverName = options.serverName;
  }

  async register(username: string, password: string): Promise<MatrixAccount> {
    const path = '/_synapse/admin/v1/register';
    const nonceAnswer = await this.call('GET', path);
    const nonce = nonceAnswer.body.nonce;
    if (nonceAnswer.status !== 200 || typeof nonce !== 'string')
      throw this.refusal('registration nonce', nonceAnswer);
    // HMAC-SHA1 over nonce, username, password and the admin flag, NUL-separated (Synapse's scheme).
    const mac = createHmac('sha1', this.options.registrationSharedSecret)
      .update([nonce, username, password, 'notadmin'].join('\0'))
      .digest('hex');
    const answer = await this.call('POST', path, { nonce, username, password, admin: false, mac });
    const { user_id: userId, access_token: accessToken } = answer.body;
    if (answer.status === 200 && typeof userId === 'string' && typeof accessToken === 'string')
      return { userId, accessToken };
    switch (answer.body.errcode) {
      case 'M_USER_IN_USE':
        throw new AppError('CONFLICT', 'this username is taken');
      case 'M_INVALID_USERNAME':
        throw AppError.validation({ username: `refused by the homeserver: ${String(answer.body.error)}` });
      case 'M_WEAK_PASSWORD':
      case 'M_PASSWORD_TOO_SHORT':
        throw AppError.validation({ password: `refused by the homeserver: ${String(answer.body.error)}` });
    }
    throw this.refusal('registration', answer);
  }

  async checkPassword(username: string, password: string): Promise<boolean> {
    const answer = await this.call('POST', '/_matrix/client/v3/login', {
      type: 'm.login.password',
      identifier: { type: 'm.id.user', user: username },
      password,
      device_id: PASSWORD_CHECK_DEVICE,
      initial_device_display_name: 'media platform bridge (password check)',
    });
    if (answer.status === 200) return true;
    if (answer.status === 403 || answer.status === 401) return false;
    if (answer.status === 429) {
      const ms = Number(answer.body.retry_after_ms);
      throw new AppError(
        'RATE_LIMITED',
        'the homeserver is rate limiting logins',
        undefined,
        Number.isFinite(ms) && ms > 0 ? Math.ceil(ms / 1000) : 5,
      );
    }
    throw this.refusal('login', answer);
  }

  async createRoom(accessToken: string, room: { name: string; aliasLocalpart: string }): Promise<MatrixRoom> {
    const alias = `#${room.aliasLocalpart}:${this.serverName}`;
    const answer = await this.call(
      'POST',
      '/_matrix/client/v3/createRoom',
      {
        name: room.name,
        room_alias_name: room.aliasLocalpart,
        preset: 'private_chat',
        visibility: 'private',
      },
      accessToken,
    );
    const roomId = answer.body.room_id;
    if (answer.status === 200 && typeof roomId === 'string') return { roomId, alias };
    if (answer.body.errcode === 'M_ROOM_IN_USE')
      throw new AppError('CONFLICT', `the Matrix room alias ${alias} is taken on the homeserver`);
    throw this.refusal('room creation', answer);
  }

  async deleteAlias(accessToken: string, alias: string): Promise<void> {
    const answer = await this.call(
      'DELETE',
      `/_matrix/client/v3/directory/room/${encodeURIComponent(alias)}`,
      undefined,
      accessToken,
    );
    if (answer.status !== 200 && answer.body.errcode !== 'M_NOT_FOUND')
      throw this.refusal('alias removal', answer);
  }

  private async call(
    method: string,
    path: string,
    body?: unknown,
    accessToken?: string,
  ): Promise<MatrixAnswer> {
    let res: Response;
    try {
      res = await fetch(this.url + path, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(accessToken ? { authorization: `Bearer ${accessToken}` } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
    } catch {
      throw new AppError('BAD_GATEWAY', 'the Matrix homeserver is unreachable');
    }
    const parsed: unknown = await res.json().catch(() => ({}));
    const answer = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
    return { status: res.status, body: answer };
  }

  /** The homeserver's refusal as BAD_GATEWAY, with its error code and message. */
  private refusal(what: string, answer: MatrixAnswer): AppError {
    const detail = [answer.body.errcode, answer.body.error].filter(Boolean).join(': ');
    return new AppError(
      'BAD_GATEWAY',
      `the Matrix homeserver refused the ${what} (HTTP ${answer.status}${detail ? `, ${detail}` : ''})`,
    );
  }
}
