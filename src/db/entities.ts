import { ApiKey } from '../auth/api-key.entity';
import { DevAccount, OidcProviderState } from '../auth/dev-issuer.entity';
import { LoginAttempt, LoginSession } from '../auth/session.entity';
import { Team, TeamMember } from '../teams/team.entity';
import { User } from '../users/user.entity';

/** Every entity of the service; each module appends its own here. */
export const entities = [
  User,
  Team,
  TeamMember,
  ApiKey,
  LoginSession,
  LoginAttempt,
  DevAccount,
  OidcProviderState,
];
