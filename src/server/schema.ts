import type { GraphQLSchema } from 'graphql';
import { buildSchemaSync, getMetadataStorage, type ContainerType, type PubSub } from 'type-graphql';
import { ApiKeyResolver } from '../auth/api-key.resolver';
import { ModelResolver } from '../models/model.resolver';
import { TeamResolver } from '../teams/team.resolver';
import { TelephonyResolver } from '../telephony/telephony.resolver';
import { UserResolver } from '../users/user.resolver';
import { MediaResolver } from '../media/media.resolver';
import { DeploymentResolver } from '../jobs/deployment.resolver';
import { JobResolver } from '../jobs/job.resolver';
import { BatchResolver } from '../batches/batch.resolver';
import { BatchLiveResolver } from '../batches/batch.live.resolver';
import { BillingResolver } from '../billing/billing.resolver';
import { BudgetResolver } from '../billing/budget.resolver';
import { WebhookResolver } from '../webhooks/webhook.resolver';
import { SecretResolver } from '../secrets/secret.resolver';
import { QuotaResolver } from '../quotas/quota.resolver';
import { AppError } from '../common/errors';
import { DateTimeISO } from '../graphql/graphql.scalars';
import type { Services } from './services';

/** Each module's resolvers, built with the services they call. */
function resolverInstances(s: Services) {
  return [
    new UserResolver(),
    new TeamResolver(s.teams, s.invites),
    new ApiKeyResolver(s.apiKeys),
    new MediaResolver(s.media),
    new ModelResolver(s.models),
    new TelephonyResolver(s.telephony),
    new DeploymentResolver(s.deployments, s.jobs, s.models, s.media),
    new JobResolver(s.jobs, s.deployments, s.models, s.media),
    new BatchResolver(s.batches, s.media),
    new BatchLiveResolver(),
    new BillingResolver(s.billing),
    new BudgetResolver(s.budgets),
    new WebhookResolver(s.webhooks),
    new SecretResolver(s.secrets),
    new QuotaResolver(s.quotas),
  ];
}

const resolverClasses = [
  UserResolver,
  TeamResolver,
  ApiKeyResolver,
  MediaResolver,
  ModelResolver,
  TelephonyResolver,
  DeploymentResolver,
  JobResolver,
  BatchResolver,
  BatchLiveResolver,
  BillingResolver,
  BudgetResolver,
  WebhookResolver,
  SecretResolver,
  QuotaResolver,
] as const;

/**
 * Every subscription brings its own feed (LISTEN/NOTIFY, `subscribe` option); type-graphql
 * still insists on a pubSub, so it gets one that refuses to be used.
 */
const noPubSub: PubSub = {
  publish: () => {
    throw new Error('subscriptions publish through the event bus');
  },
  subscribe: () => {
    throw new Error('subscriptions read from the event bus');
  },
};

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
  return buildSchemaSync({
    resolvers: resolverClasses,
    container,
    validate: false,
    emitSchemaFile: false,
    pubSub: noPubSub,
    scalarsMap: [{ type: Date, scalar: DateTimeISO }],
  });
}
