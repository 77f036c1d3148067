import type { Parser } from './config.parser';

/** Who calls: the identity provider, the login flow and its sessions, teams' invitations and audit. */

export interface IdentityConfig {
  oidcIssuer: string | undefined;
  oidcAudience: string | undefined;
  oidcJwksCooldownSeconds: number;
  oidcClientId: string;
  oidcClientSecret: string;
  /** How the login flow's client authenticates at the token endpoint. */
  oidcClientAuthMethod: 'client_secret_post' | 'client_secret_basic';
  /** Scopes the login flow asks the identity provider for. */
  oidcScopes: string;
  /**
   * How the login URL names OIDC_AUDIENCE to the provider: RFC 8707's `resource` (an absolute URI
   * only), Auth0's `audience`, both, or neither.
   */
  oidcAudienceParameters: 'both' | 'resource' | 'audience' | 'none';
  /** Bound on each call the login flow makes to the identity provider. */
  oidcTimeoutSeconds: number;
  /** Lifetime of a login session (the `auth_session` cookie). */
  sessionTtlSeconds: number;
  /** Lifetime of the access tokens the web app gets from its session (`POST /api/v1/auth/token`). */
  sessionTokenTtlSeconds: number;
  /** How long a team invitation can be accepted. */
  teamInviteTtlHours: number;
  /** Where invitation mails go out (smtp: or smtps:); unset: the inviter passes the link on. */
  smtpUrl: string | undefined;
  /** The From of invitation mails. */
  mailFrom: string;
  /** How long team audit records are kept. */
  auditRetentionDays: number;
}

export function identityConfig(p: Parser): IdentityConfig {
  const oidcScopes = p.str('OIDC_SCOPES', 'openid profile email offline_access');
  if (!oidcScopes.split(/\s+/).includes('openid')) p.problems.push('OIDC_SCOPES: must include openid');
  return {
    // Auth0's issuer ends with a slash, and tokens must name it exactly.
    oidcIssuer: p.url('OIDC_ISSUER', undefined, ['http:', 'https:'], true),
    oidcAudience: p.raw('OIDC_AUDIENCE'),
    oidcJwksCooldownSeconds: p.int('OIDC_JWKS_COOLDOWN_SECONDS', 30, 0, 3600),
    oidcClientId: p.str('OIDC_CLIENT_ID', 'media-platform-dev'),
    oidcClientSecret: p.str('OIDC_CLIENT_SECRET', 'media-platform-dev-secret'),
    oidcClientAuthMethod: p.oneOf(
      'OIDC_CLIENT_AUTH_METHOD',
      ['client_secret_post', 'client_secret_basic'] as const,
      'client_secret_post',
    ),
    oidcScopes,
    oidcAudienceParameters: p.oneOf(
      'OIDC_AUDIENCE_PARAMETERS',
      ['both', 'resource', 'audience', 'none'] as const,
      'both',
    ),
    oidcTimeoutSeconds: p.int('OIDC_TIMEOUT_SECONDS', 5, 1, 120),
    sessionTtlSeconds: p.int('SESSION_TTL_SECONDS', 14 * 24 * 3600, 1, 365 * 24 * 3600),
    sessionTokenTtlSeconds: p.int('SESSION_TOKEN_TTL_SECONDS', 600, 10, 3600),
    teamInviteTtlHours: p.int('TEAM_INVITE_TTL_HOURS', 168, 1, 24 * 365),
    smtpUrl: p.url('SMTP_URL', undefined, ['smtp:', 'smtps:'], true),
    mailFrom: p.str('MAIL_FROM', 'media-platform@localhost'),
    auditRetentionDays: p.int('AUDIT_RETENTION_DAYS', 365, 1, 36500),
  };
}
