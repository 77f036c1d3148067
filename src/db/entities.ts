import { ApiKey } from '../auth/api-key.entity';
import {
  BridgeApiKey,
  BridgeUser,
  DendriteInstance,
  LoginFailure,
  Matterbridge,
} from '../chat-bridge/chat-bridge.entity';
import { Team, TeamMember } from '../teams/team.entity';
import { User } from '../users/user.entity';

/** Every entity of the service; each module appends its own here. */
export const entities = [
  User,
  Team,
  TeamMember,
  ApiKey,
  BridgeUser,
  BridgeApiKey,
  DendriteInstance,
  Matterbridge,
  LoginFailure,
];
