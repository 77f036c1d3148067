import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import type { SecretBox } from '../common/sealing';
import { BridgeApiKey, BridgeUser } from './chat-bridge.entity';
import {
  hashBridgeApiKey,
  hashPassword,
  newApiKey,
  PASSWORD_MAX,
  validatePassword,
  validateUsername,
  verifyPassword,
} from './chat-bridge.credentials';
import { accessTokenContext, conflictOn, requireHomeserver, requireString } from './chat-bridge.rules';
import type { LoginThrottle } from './chat-bridge.throttle';
import type { Homeserver } from './homeserver.port';

/** The bridge user behind an `X-API-Key`. */
export interface BridgePrincipal {
  userId: string;
  username: string;
}

export interface BridgeAccountsDeps {
  orm: MikroORM;
  homeserver: Homeserver | null;
  secrets: SecretBox;
  throttle: LoginThrottle;
}

const API_KEY_LAST_USED_RESOLUTION_MS = 60_000;

/** The bridge's users: registration on the homeserver, login, and their API keys. */
export class BridgeAccounts {
  private dummyHash: Promise<string> | undefined;

  constructor(private readonly deps: BridgeAccountsDeps) {}

  /** Registers the account on the homeserver and answers a new API key, shown only here. */
  async createUser(input: {
    username: unknown;
    password: unknown;
  }): Promise<{ apiKey: string; hostname: string }> {
    const username = requireString(input.username, 'username');
    const password = requireString(input.password, 'password');
    const homeserver = requireHomeserver(this.deps.homeserver);
    validateUsername(username, homeserver.serverName);
    validatePassword(password, username);
    const passwordHash = await hashPassword(password);
    const apiKey = newApiKey();
    try {
      // The inserted row holds off a concurrent creation of the same name until the homeserver has
      // answered; when registration fails, nothing is stored.
      await this.deps.orm.em.fork().transactional(async (em) => {
        const user = em.create(BridgeUser, {
          username,
          passwordHash,
          matrixUserId: '',
          accessTokenSealed: '',
        });
        await em.flush();
        const account = await homeserver.register(username, password);
        user.matrixUserId = account.userId;
        user.accessTokenSealed = this.deps.secrets.seal(account.accessToken, accessTokenContext(user.id));
        em.create(BridgeApiKey, { user, keyHash: hashBridgeApiKey(apiKey) });
      });
    } catch (err) {
      throw conflictOn(err, { username: 'this username is taken' });
    }
    return { apiKey, hostname: homeserver.serverName };
  }

  /**
   * Checks the password here and on the homeserver and answers a new API key. Unknown users and
   * wrong passwords get the same answer after the same work; failures are throttled.
   */
  async login(input: {
    username: unknown;
    password: unknown;
    clientIp: string;
  }): Promise<{ apiKey: string }> {
    const username = requireString(input.username, 'username');
    const password = requireString(input.password, 'password');
    if (username.length > 255) throw AppError.validation({ username: 'is too long' });
    if (password.length > PASSWORD_MAX) throw AppError.validation({ password: 'is too long' });
    const homeserver = requireHomeserver(this.deps.homeserver);
    const throttleKey = username.toLowerCase();
    await this.deps.throttle.attempt(throttleKey, input.clientIp);
    const em = this.deps.orm.em.fork();
    const user = await em.findOne(BridgeUser, { username });
    const matches = await verifyPassword(password, user?.passwordHash ?? (await this.dummyPasswordHash()));
    if (!user || !matches || !(await homeserver.checkPassword(username, password))) {
      throw new AppError('UNAUTHENTICATED', 'wrong username or password');
    }
    await this.deps.throttle.succeeded(throttleKey, input.clientIp);
    const apiKey = newApiKey();
    em.create(BridgeApiKey, { user, keyHash: hashBridgeApiKey(apiKey) });
    await em.flush();
    return { apiKey };
  }

  async authenticate(apiKey: string | undefined): Promise<BridgePrincipal> {
    if (!apiKey) throw new AppError('UNAUTHENTICATED', 'send your API key in the X-API-Key header');
    const em = this.deps.orm.em.fork();
    const key = await em.findOne(BridgeApiKey, { keyHash: hashBridgeApiKey(apiKey) }, { populate: ['user'] });
    if (!key) throw new AppError('UNAUTHENTICATED', 'unknown API key');
    if (!key.lastUsedAt || Date.now() - key.lastUsedAt.getTime() > API_KEY_LAST_USED_RESOLUTION_MS)
      await em.nativeUpdate(BridgeApiKey, { id: key.id }, { lastUsedAt: new Date() });
    return { userId: key.user.id, username: key.user.username };
  }

  private dummyPasswordHash(): Promise<string> {
    return (this.dummyHash ??= hashPassword('not the password of anyone'));
  }
}
