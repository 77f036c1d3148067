import { createHmac } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../config';
import type { DevAccountService } from './dev-account.service';
import type { DevAccount } from './dev-issuer.entity';
import { postgresAdapter } from './dev-issuer.adapter';
import { messagePage, PAGE_SECURITY_HEADERS } from './dev-issuer.pages';
import {
  apiResource,
  devAudience,
  devIssuerUrl,
  USER_TOKEN_TTL_SECONDS,
  type SigningKey,
} from './dev-issuer';
import { callbackUrl, LOGIN_VERSIONS } from './login.service';

const PROVIDER_SESSION_TTL_SECONDS = 14 * 24 * 3600;

function claimsOf(account: DevAccount) {
  return {
    sub: account.username,
    preferred_username: account.username,
    name: account.name ?? undefined,
    email: account.email ?? undefined,
    email_verified: account.email ? false : undefined,
  };
}

/**
 * The built-in development identity provider: a real OpenID provider (oidc-provider) at
 * `{PUBLIC_URL}/oidc`, signing with the development key under DATA_DIR, its state in PostgreSQL.
 * One confidential client (OIDC_CLIENT_ID/SECRET) whose consent is implied: it is this service.
 */
export function createDevProvider(deps: {
  config: Config;
  key: SigningKey;
  orm: MikroORM;
  accounts: DevAccountService;
}): Provider {
  const { config, key, orm, accounts } = deps;
  const issuer = devIssuerUrl(config.publicUrl);
  const resource = apiResource(config.publicUrl);
  const mountPath = new URL(issuer).pathname;

  const configuration: Configuration = {
    adapter: postgresAdapter(orm),
    jwks: { keys: [key.privateJwk] } as Configuration['jwks'],
    clients: [
      {
        client_id: config.oidcClientId,
        client_secret: config.oidcClientSecret,
        client_name: 'Media platform',
        redirect_uris: LOGIN_VERSIONS.map((v) => callbackUrl(config.publicUrl, v)),
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: config.oidcClientAuthMethod,
      },
    ],
    cookies: {
      // Signed with a secret derived from the signing key: stable across restarts, nothing to configure.
      keys: [createHmac('sha256', String(key.privateJwk.d)).update('dev-issuer cookies').digest('base64url')],
      long: { signed: true, httpOnly: true, sameSite: 'lax' },
      short: { signed: true, httpOnly: true, sameSite: 'lax' },
    },
    scopes: ['openid', 'offline_access', 'profile', 'email'],
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name'],
      email: ['email', 'email_verified'],
    },
    // Profile claims in the ID token too (not only at userinfo): the callback reads them from it.
    conformIdTokenClaims: false,
    async findAccount(_ctx, sub) {
      const account = await accounts.find(sub);
      return account ? { accountId: account.username, claims: () => claimsOf(account) } : undefined;
    },
    // Access tokens carry the profile as well, like Keycloak's, so the API keeps users' profiles.
    async extraTokenClaims(_ctx, token) {
      const account = 'accountId' in token && token.accountId ? await accounts.find(token.accountId) : null;
      if (!account) return undefined;
      const { sub: _sub, ...profile } = claimsOf(account);
      return profile;
    },
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo(_ctx, indicator) {
          if (indicator !== resource) throw new errors.InvalidTarget();
          return {
            scope: 'api',
            audience: devAudience(config),
            accessTokenFormat: 'jwt',
            accessTokenTTL: USER_TOKEN_TTL_SECONDS,
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    // The only client is this service itself: what it asks for is granted without a consent page.
    async loadExistingGrant(ctx: KoaContextWithOIDC) {
      const { client, session, params } = ctx.oidc;
      if (!client || !session?.accountId) return undefined;
      const grantId = ctx.oidc.result?.consent?.grantId ?? session.grantIdFor(client.clientId);
      const grant =
        (grantId && (await ctx.oidc.provider.Grant.find(grantId))) ||
        new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
      grant.addOIDCScope(String(params?.scope ?? 'openid'));
      grant.addResourceScope(resource, 'api');
      await grant.save();
      return grant;
    },
    // Refresh tokens without the `prompt=consent` that `offline_access` would need.
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    interactions: { url: (_ctx, interaction) => `${mountPath}/interaction/${interaction.uid}` },
    // The provider's own session and grants are independent of the service's login sessions
    // (SESSION_TTL_SECONDS), which bound the use of refresh tokens on their side.
    ttl: {
      AccessToken: USER_TOKEN_TTL_SECONDS,
      AuthorizationCode: 60,
      IdToken: 3600,
      Interaction: 3600,
      Grant: PROVIDER_SESSION_TTL_SECONDS,
      Session: PROVIDER_SESSION_TTL_SECONDS,
      RefreshToken: PROVIDER_SESSION_TTL_SECONDS,
    },
    renderError(ctx, out) {
      ctx.type = 'html';
      ctx.set(PAGE_SECURITY_HEADERS);
      ctx.body = messagePage('Sign-in error', `${out.error}: ${out.error_description ?? 'unexpected error'}`);
    },
  };
  const provider = new Provider(issuer, configuration);
  // Behind a TLS-terminating proxy the provider must trust X-Forwarded-Proto to know it is https.
  provider.proxy = config.publicUrl.startsWith('https:');
  return provider;
}
