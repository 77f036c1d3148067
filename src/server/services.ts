import type { MikroORM } from '@mikro-orm/postgresql';
import { ApiKeyService } from '../auth/api-key.service';
import { Authenticator } from '../auth/authenticator';
import { LoginService } from '../auth/login.service';
import { openIdClient } from '../auth/oidc.client';
import { SessionService } from '../auth/session.service';
import type { TokenVerifier } from '../auth/token-verifier';
import type { Config } from '../config';
import { TeamService } from '../teams/team.service';
import { UserService } from '../users/user.service';

/** The service singletons of one process. Each forks its own EntityManager per call. */
export function createServices(config: Config, orm: MikroORM, verifier: TokenVerifier) {
  const users = new UserService(orm);
  const teams = new TeamService(orm);
  const apiKeys = new ApiKeyService(orm, teams);
  const sessions = new SessionService(orm, config.sessionTtlSeconds);
  const authenticator = new Authenticator(config, verifier, users, apiKeys, sessions);
  const identityProvider = openIdClient({
    issuer: verifier.issuer,
    clientId: config.oidcClientId,
    clientSecret: config.oidcClientSecret,
    clientAuthMethod: config.oidcClientAuthMethod,
    scopes: config.oidcScopes,
    audience: config.oidcAudience,
    timeoutSeconds: config.oidcTimeoutSeconds,
  });
  const login = new LoginService(config.publicUrl, identityProvider, verifier, users, sessions);
  return { users, teams, apiKeys, authenticator, login };
}

export type Services = ReturnType<typeof createServices>;
