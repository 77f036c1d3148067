import type { GraphQLSchema } from 'graphql';
import { buildSchemaSync, type ContainerType } from 'type-graphql';
import { ApiKeyResolver } from '../auth/api-key.resolver';
import { TeamResolver } from '../teams/team.resolver';
import { TelephonyResolver } from '../telephony/telephony.resolver';
import { UserResolver } from '../users/user.resolver';
import { AppError } from '../common/errors';
import type { Services } from './services';

/** Each module's resolvers, built with the services they call. */
function resolverInstances(s: Services) {
  return [
    new UserResolver(),
    new TeamResolver(s.teams),
    new ApiKeyResolver(s.apiKeys),
    new TelephonyResolver(s.telephony),
  ];
}

const resolverClasses = [UserResolver, TeamResolver, ApiKeyResolver, TelephonyResolver] as const;

export function buildAppSchema(services?: Services): GraphQLSchema {
  const instances = services ? resolverInstances(services) : [];
  const container: ContainerType = {
    get(cls) {
      const instance = instances.find((i) => i.constructor === cls);
      if (!instance) throw new AppError('INTERNAL', `no resolver instance for ${String(cls.name)}`);
      return instance;
    },
  };
  return buildSchemaSync({ resolvers: resolverClasses, container, validate: false, emitSchemaFile: false });
}
