import * as oidc from 'openid-client';
import { AppError } from '../common/errors';
import type { VerifiedClaims } from './token-verifier';

export interface ProviderTokens {
  accessToken: string;
  refreshToken: string | null;
  idToken: string | null;
  /** The ID token's claims, validated (signature, iss, aud, exp, nonce). */
  idClaims: VerifiedClaims | null;
}

/** The identity provider as the login flow sees it (port; openid-client below is the adapter). */
export interface IdentityProviderClient {
  authorizationUrl(params: {
    redirectUri: string;
    state: string;
    nonce: string;
    codeChallenge: string;
  }): Promise<string>;
  /** `callbackUrl` is the redirect URI with the provider's answer in its query. */
  exchangeCode(
    callbackUrl: URL,
    checks: { state: string; nonce: string; codeVerifier: string },
  ): Promise<ProviderTokens>;
  refresh(refreshToken: string): Promise<ProviderTokens>;
}

export interface OpenIdClientOptions {
  issuer: string;
  clientId: string;
  clientSecret: string;
  clientAuthMethod: 'client_secret_post' | 'client_secret_basic';
  scopes: string;
  /** The API the access token is for (OIDC_AUDIENCE). */
  audience?: string;
  /** How it is named: RFC 8707's `resource`, Auth0's `audience`, both or neither. */
  audienceParameters?: 'both' | 'resource' | 'audience' | 'none';
  timeoutSeconds: number;
}

/**
 * The parameters that ask the provider for an access token for the API: `resource` (RFC 8707,
 * which standards-following providers read; it must be an absolute URI, so another audience is
 * not sent that way) and `audience` (Auth0's own). Providers ignore parameters they do not know.
 */
export function audienceParameters({
  audience,
  audienceParameters: which = 'both',
}: Pick<OpenIdClientOptions, 'audience' | 'audienceParameters'>): Record<string, string> {
  if (!audience) return {};
  const out: Record<string, string> = {};
  if ((which === 'both' || which === 'resource') && isResourceUri(audience)) out.resource = audience;
  if (which === 'both' || which === 'audience') out.audience = audience;
  return out;
}

/** RFC 8707, section 2: an absolute URI without a fragment. */
function isResourceUri(value: string): boolean {
  try {
    return !new URL(value).hash && !value.includes('#') && /^[a-z][a-z0-9+.-]*:/i.test(value);
  } catch {
    return false;
  }
}

/**
 * The login flow's OIDC client (openid-client). Discovery happens at first use, not at start (the
 * service may be its own issuer and is not listening yet then); it is cached, and retried on the
 * next request after a failure. Every call is bounded by the timeout.
 */
export function openIdClient(opts: OpenIdClientOptions): IdentityProviderClient {
  let configuration: Promise<oidc.Configuration> | undefined;
  const discover = () =>
    oidc.discovery(new URL(opts.issuer), opts.clientId, undefined, clientAuth(opts), {
      timeout: opts.timeoutSeconds,
      execute: new URL(opts.issuer).protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
    });
  const config = async (): Promise<oidc.Configuration> => {
    configuration ??= discover();
    try {
      return await configuration;
    } catch (err) {
      configuration = undefined;
      throw providerError(err, 'discovery');
    }
  };
  const tokens = (res: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers): ProviderTokens => ({
    accessToken: res.access_token,
    refreshToken: res.refresh_token ?? null,
    idToken: res.id_token ?? null,
    idClaims: (res.claims() as VerifiedClaims | undefined) ?? null,
  });

  return {
    async authorizationUrl({ redirectUri, state, nonce, codeChallenge }) {
      const c = await config();
      try {
        return oidc
          .buildAuthorizationUrl(c, {
            redirect_uri: redirectUri,
            scope: opts.scopes,
            response_type: 'code',
            state,
            nonce,
            code_challenge: codeChallenge,
            code_challenge_method: 'S256',
            ...audienceParameters(opts),
          })
          .toString();
      } catch (err) {
        throw providerError(err, 'authorization request');
      }
    },

    async exchangeCode(callbackUrl, { state, nonce, codeVerifier }) {
      const c = await config();
      try {
        return tokens(
          await oidc.authorizationCodeGrant(c, callbackUrl, {
            expectedState: state,
            expectedNonce: nonce,
            pkceCodeVerifier: codeVerifier,
            idTokenExpected: true,
          }),
        );
      } catch (err) {
        throw providerError(err, 'code exchange');
      }
    },

    async refresh(refreshToken) {
      const c = await config();
      try {
        return tokens(await oidc.refreshTokenGrant(c, refreshToken));
      } catch (err) {
        throw providerError(err, 'refresh');
      }
    },
  };
}

function clientAuth({ clientAuthMethod, clientSecret }: OpenIdClientOptions): oidc.ClientAuth {
  return clientAuthMethod === 'client_secret_basic'
    ? oidc.ClientSecretBasic(clientSecret)
    : oidc.ClientSecretPost(clientSecret);
}

const UNREACHABLE_CODES = new Set(['OAUTH_TIMEOUT', 'OAUTH_ABORT']);

/**
 * fetch's network failure or openid-client's timeout. By name, not instanceof: the TypeError may
 * come from another realm (under jest, openid-client then wraps it in a ClientError).
 */
function isUnreachable(err: unknown): boolean {
  const { name, message, code } = (err ?? {}) as { name?: string; message?: string; code?: string };
  return (name === 'TypeError' && message === 'fetch failed') || UNREACHABLE_CODES.has(code ?? '');
}

/**
 * What went wrong, in the service's codes: the user's answer or grant was refused (400/401), the
 * provider cannot be reached (503) or answered something unusable (502).
 */
function providerError(err: unknown, step: string): unknown {
  if (err instanceof AppError) return err;
  if (err instanceof oidc.AuthorizationResponseError) {
    const description = err.error_description ? `: ${err.error_description}` : '';
    return new AppError(
      'UNAUTHENTICATED',
      `the identity provider refused the sign-in (${err.error}${description})`,
    );
  }
  if (err instanceof oidc.ResponseBodyError) {
    if (err.error === 'invalid_grant') {
      return new AppError(
        step === 'refresh' ? 'UNAUTHENTICATED' : 'BAD_REQUEST',
        step === 'refresh'
          ? 'the refresh token is expired or revoked: sign in again'
          : 'the authorization code is invalid, expired or already used: sign in again',
      );
    }
    return new AppError('BAD_GATEWAY', `the identity provider refused the ${step}: ${err.error}`);
  }
  if (isUnreachable(err) || isUnreachable((err as { cause?: unknown }).cause)) {
    return new AppError(
      'UNAVAILABLE',
      'the identity provider is unreachable, try again shortly',
      undefined,
      5,
    );
  }
  if (err instanceof oidc.ClientError) {
    return new AppError(
      'BAD_GATEWAY',
      `the identity provider's answer to the ${step} is unusable: ${err.message}`,
    );
  }
  return err;
}
