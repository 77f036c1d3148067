import type { GraphQLSchema } from 'graphql';
import { buildSchemaSync, getMetadataStorage, type ContainerType } from 'type-graphql';
import { ApiKeyResolver } from '../auth/api-key.resolver';
import { ModelResolver } from '../models/model.resolver';
import { TeamResolver } from '../teams/team.resolver';
import { TelephonyResolver } from '../telephony/telephony.resolver';
import { UserResolver } from '../users/user.resolver';
import { MediaResolver } from '../media/media.resolver';
import { BillingResolver } from '../billing/billing.resolver';
import { AppError } from '../common/errors';
import type { Services } from './services';

/** Each module's resolvers, built with the services they call. */
function resolverInstances(s: Services) {
  return [
    new UserResolver(),
    new TeamResolver(s.teams),
    new ApiKeyResolver(s.apiKeys),
    new MediaResolver(s.media),
    new ModelResolver(s.models),
    new TelephonyResolver(s.telephony),
    new BillingResolver(s.billing),
  ];
}

const resolverClasses = [
  UserResolver,
  TeamResolver,
  ApiKeyResolver,
  MediaResolver,
  ModelResolver,
  TelephonyResolver,
  BillingResolver,
] as const;

export function buildAppSchema(services?: Services): GraphQLSchema {
  const instances = services ? resolverInstances(services) : [];
  const container: ContainerType = {
    get(cls) {
      const instance = instances.find((i) => i.constructor === cls);
      if (!instance) throw new AppError('INTERNAL', `no resolver instance for ${String(cls.name)}`);
      return instance;
    },
  };
  // No middlewares are used, so fields without a resolver method take graphql-js's plain property
  // read instead of type-graphql's wrapper: list queries resolve thousands of such fields.
  for (const type of getMetadataStorage().objectTypes) type.simpleResolvers ??= true;
  return buildSchemaSync({ resolvers: resolverClasses, container, validate: false, emitSchemaFile: false });
}
