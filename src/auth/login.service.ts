import { createHash } from 'node:crypto';
import { AppError } from '../common/errors';
import type { TeamService } from '../teams/team.service';
import type { UserService } from '../users/user.service';
import type { IdentityProviderClient, ProviderTokens } from './oidc.client';
import { randomToken, sha256, type SessionService } from './session.service';
import type { TokenVerifier, VerifiedClaims } from './token-verifier';

export const LOGIN_VERSIONS = ['v1', 'v2'] as const;
export type LoginVersion = (typeof LOGIN_VERSIONS)[number];

/** Where the identity provider sends the browser back: the redirect URIs to allow. */
export function callbackUrl(publicUrl: string, version: LoginVersion): string {
  return `${publicUrl}/api/${version}/auth/callback`;
}

export interface LoginTokens {
  accessToken: string;
  refreshToken: string;
  idToken: string;
}

export interface CallbackResult {
  tokens: LoginTokens;
  /** The `auth_session` cookie's value. */
  sessionCookie: string;
  /** Where the login's starter asked the browser to go back to. */
  returnTo: string | null;
}

const MAX_RETURN_TO = 2048;

/**
 * A `return_to` must be a path of this service, so the login flow is no open redirect: no scheme,
 * no host (`//evil`, `/\\evil`), no control characters, and resolving it keeps our origin.
 */
export function checkReturnTo(publicUrl: string, value: unknown): string | null {
  if (value === undefined || value === null || value === '') return null;
  const refuse = () => AppError.validation({ return_to: 'must be a path of this service, such as /jobs' });
  if (typeof value !== 'string' || value.length > MAX_RETURN_TO) throw refuse();
  // eslint-disable-next-line no-control-regex
  if (!value.startsWith('/') || /^\/[/\\]/.test(value) || /[\\\u0000-\u001f\u007f]/.test(value))
    throw refuse();
  const base = new URL(publicUrl);
  const url = new URL(value, base);
  if (url.origin !== base.origin) throw refuse();
  return `${url.pathname}${url.search}${url.hash}`;
}

/**
 * The login flow: OIDC authorization code with PKCE, state and nonce against the identity
 * provider, then a session of our own. The access token handed out is the provider's, checked
 * with the API's own verifier first, so what the callback returns is what the API accepts.
 */
export class LoginService {
  constructor(
    private readonly publicUrl: string,
    private readonly idp: IdentityProviderClient,
    private readonly verifier: TokenVerifier,
    private readonly users: UserService,
    private readonly sessions: SessionService,
    private readonly teams: TeamService,
  ) {}

  /**
   * Starts a login. A browser gets a binding value to keep in a cookie: the callback then only
   * completes in that same browser. An API client's login URL may be opened anywhere.
   */
  async start(input: {
    version: LoginVersion;
    browser: boolean;
    returnTo?: unknown;
  }): Promise<{ loginUrl: string; binding: string | null }> {
    const returnTo = checkReturnTo(this.publicUrl, input.returnTo);
    const state = randomToken();
    const nonce = randomToken();
    const codeVerifier = randomToken();
    const binding = input.browser ? randomToken() : null;
    const redirectUri = callbackUrl(this.publicUrl, input.version);
    const loginUrl = await this.idp.authorizationUrl({
      redirectUri,
      state,
      nonce,
      codeChallenge: createHash('sha256').update(codeVerifier).digest('base64url'),
    });
    await this.sessions.saveAttempt({
      state,
      nonce,
      codeVerifier,
      redirectUri,
      bindingHash: binding ? sha256(binding) : null,
      returnTo,
    });
    return { loginUrl, binding };
  }

  /** Completes a login from the provider's redirect: `query` is the callback's query string. */
  async callback(input: {
    version: LoginVersion;
    query: Record<string, unknown>;
    binding?: string;
  }): Promise<CallbackResult> {
    const { state } = input.query;
    if (typeof state !== 'string' || !state) {
      throw new AppError('BAD_REQUEST', 'the callback has no state: start again at the login URL');
    }
    const attempt = await this.sessions.takeAttempt(state);
    if (!attempt || attempt.redirectUri !== callbackUrl(this.publicUrl, input.version)) {
      throw new AppError(
        'BAD_REQUEST',
        'unknown, expired or already used login state: start again at the login URL',
      );
    }
    if (attempt.bindingHash && (!input.binding || sha256(input.binding) !== attempt.bindingHash)) {
      throw new AppError('BAD_REQUEST', 'this login was started in another browser: start again here');
    }
    const url = new URL(attempt.redirectUri);
    for (const [k, v] of Object.entries(input.query)) if (typeof v === 'string') url.searchParams.set(k, v);
    const tokens = await this.idp.exchangeCode(url, {
      state,
      nonce: attempt.nonce,
      codeVerifier: attempt.codeVerifier,
    });
    const user = await this.users.upsertFromClaims(await this.claimsOf(tokens), { complete: true });
    const sessionCookie = await this.sessions.open(user, tokens.refreshToken);
    return {
      tokens: loginTokens(tokens, tokens.refreshToken ?? ''),
      sessionCookie,
      returnTo: attempt.returnTo,
    };
  }

  /** New tokens for a refresh token of a live session; the session keeps the rotated one. */
  async refresh(input: { refreshToken: unknown }): Promise<LoginTokens> {
    const { refreshToken } = input;
    if (typeof refreshToken !== 'string' || !refreshToken) {
      throw AppError.validation({ refresh_token: 'required: the refresh_token of the login' });
    }
    const session = await this.sessions.byRefreshToken(refreshToken);
    const tokens = await this.idp.refresh(refreshToken);
    const claims = await this.claimsOf(tokens);
    if (claims.sub !== session.user.subject) {
      throw new AppError('BAD_GATEWAY', 'the identity provider refreshed the tokens of another user');
    }
    await this.users.upsertFromClaims(claims, { complete: tokens.idClaims !== null });
    if (tokens.refreshToken && tokens.refreshToken !== refreshToken) {
      await this.sessions.rotate(session, tokens.refreshToken);
    }
    return loginTokens(tokens, tokens.refreshToken ?? refreshToken);
  }

  /**
   * A short-lived access token for the web app, from its `auth_session` cookie: acting as the user,
   * or as `teamId` when the user is one of its members (another team looks missing).
   */
  async sessionToken(input: {
    cookie?: string;
    teamId?: unknown;
  }): Promise<{ accessToken: string; expiresAt: Date; teamId: string | null }> {
    const session = await this.sessions.byCookie(input.cookie);
    let teamId: string | null = null;
    if (input.teamId !== undefined && input.teamId !== null) {
      const membership = await this.teams.membership(session.user.id, input.teamId);
      if (!membership) throw AppError.notFound('team');
      teamId = membership.team.id;
    }
    const { value, expiresAt } = await this.sessions.issueToken(session, teamId);
    return { accessToken: value, expiresAt, teamId };
  }

  /** Ends the session of the cookie and/or of the refresh token; ending none is not an error. */
  async logout(input: { cookie?: string; refreshToken?: unknown }): Promise<void> {
    const refreshToken = typeof input.refreshToken === 'string' ? input.refreshToken : undefined;
    await this.sessions.end({ cookie: input.cookie, refreshToken });
  }

  /**
   * The access token's claims (it must pass the API's verifier), completed by the ID token's.
   * A provider that issues tokens the API refuses is misconfigured: say so rather than hand them out.
   */
  private async claimsOf(tokens: ProviderTokens): Promise<VerifiedClaims> {
    let claims: VerifiedClaims;
    try {
      claims = await this.verifier.verify(tokens.accessToken);
    } catch (err) {
      if (err instanceof AppError && err.code === 'UNAUTHENTICATED') {
        throw new AppError(
          'BAD_GATEWAY',
          `the identity provider issued an access token this API does not accept (${err.message}); ` +
            'it must be a JWT for OIDC_AUDIENCE signed by the OIDC_ISSUER (see README, "Signing in")',
        );
      }
      throw err;
    }
    if (tokens.idClaims && tokens.idClaims.sub !== claims.sub) {
      throw new AppError('BAD_GATEWAY', 'the ID token and the access token name different users');
    }
    return { ...claims, ...tokens.idClaims };
  }
}

function loginTokens(tokens: ProviderTokens, refreshToken: string): LoginTokens {
  return { accessToken: tokens.accessToken, refreshToken, idToken: tokens.idToken ?? '' };
}
