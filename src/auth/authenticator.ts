import type { Config } from '../config';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import type { User } from '../users/user.entity';
import type { UserService } from '../users/user.service';
import type { ApiKeyService } from './api-key.service';
import type { Principal } from './principal';
import { SESSION_TOKEN_PREFIX, type SessionService } from './session.service';
import type { TokenVerifier } from './token-verifier';

export interface Credentials {
  authorization?: string;
  apiKey?: string;
}

/** Verified user tokens kept in memory: at most this many, each for at most this long. */
const TOKEN_CACHE_SIZE = 10_000;
const TOKEN_CACHE_MS = 60_000;
const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** Turns the one credential of a request into a principal (null when there is none). */
export class Authenticator {
  /**
   * A user token's claims never change, so its verification and the user it names are kept until
   * it expires (bounded): repeated requests skip the signature check and the user lookup. API keys
   * are never cached: revoking one must take effect on the very next request, in every process.
   */
  private readonly tokens = new Map<string, { principal: Principal; until: number }>();

  constructor(
    private readonly config: Config,
    private readonly verifier: TokenVerifier,
    private readonly users: UserService,
    private readonly apiKeys: ApiKeyService,
    private readonly sessions: SessionService,
  ) {}

  async authenticate({ authorization, apiKey }: Credentials): Promise<Principal | null> {
    if (authorization !== undefined && apiKey !== undefined) {
      throw new AppError(
        'UNAUTHENTICATED',
        'send exactly one credential: an Authorization header or an API key header',
      );
    }
    if (apiKey !== undefined) return this.fromApiKey(apiKey.trim());
    if (authorization === undefined) return null;
    const match = BEARER.exec(authorization);
    if (!match) throw new AppError('UNAUTHENTICATED', 'the Authorization header must be "Bearer <token>"');
    const token = match[1];
    if (token.startsWith(SESSION_TOKEN_PREFIX)) return this.fromSessionToken(token);
    return isUuid(token) ? this.fromApiKey(token) : this.fromUserToken(token);
  }

  /**
   * The principal when it is known without waiting: null without credentials, the principal of
   * a user token still in the cache; undefined when `authenticate` must run (anything else,
   * errors included). Saves the per-request promises of the common case.
   */
  known({ authorization, apiKey }: Credentials): Principal | null | undefined {
    if (apiKey !== undefined) return undefined;
    if (authorization === undefined) return null;
    const token = BEARER.exec(authorization)?.[1];
    return token === undefined ? undefined : this.cachedUser(token);
  }

  /** The principal of a user token verified less than its cache time ago. */
  private cachedUser(token: string): Principal | undefined {
    const cached = this.tokens.get(token);
    return cached && cached.until > Date.now() ? cached.principal : undefined;
  }

  /** The user of a login session cookie; only `fetch-metadata` takes this credential. */
  async authenticateSession(cookie: string | undefined): Promise<Principal> {
    const { user } = await this.sessions.byCookie(cookie);
    return this.userPrincipal(user, 'session');
  }

  private async fromUserToken(token: string): Promise<Principal> {
    const cached = this.cachedUser(token);
    if (cached) return cached;
    this.tokens.delete(token);
    const claims = await this.verifier.verify(token);
    const principal = this.userPrincipal(await this.users.upsertFromClaims(claims), 'user_token');
    if (this.tokens.size >= TOKEN_CACHE_SIZE) this.tokens.delete(this.tokens.keys().next().value!);
    const until = Math.min((claims.exp ?? 0) * 1000, Date.now() + TOKEN_CACHE_MS);
    this.tokens.set(token, { principal, until });
    return principal;
  }

  private userPrincipal(user: User, credential: 'user_token' | 'session'): Principal {
    return {
      user,
      team: null,
      credential,
      apiKeyId: null,
      isAdmin: this.config.adminSubjects.includes(user.subject),
      teamRole: null,
    };
  }

  /** Never cached, like API keys: signing out must end the web app's tokens at once. */
  private async fromSessionToken(value: string): Promise<Principal> {
    const found = await this.sessions.byToken(value);
    if (!found) throw new AppError('UNAUTHENTICATED', 'unknown or expired session token: get a new one');
    const { token, role } = found;
    const { user } = token.session;
    return {
      user,
      team: token.team,
      credential: 'session_token',
      apiKeyId: null,
      isAdmin: !token.team && this.config.adminSubjects.includes(user.subject),
      teamRole: role,
    };
  }

  private async fromApiKey(value: string): Promise<Principal> {
    const key = isUuid(value) ? await this.apiKeys.resolve(value) : null;
    if (!key) throw new AppError('UNAUTHENTICATED', 'unknown or revoked API key');
    return {
      user: key.createdBy,
      team: key.team,
      credential: 'api_key',
      apiKeyId: key.id,
      isAdmin: !key.team && this.config.adminSubjects.includes(key.createdBy.subject),
      teamRole: key.team ? (key.role ?? 'member') : null,
    };
  }
}
