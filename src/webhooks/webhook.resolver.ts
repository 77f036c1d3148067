import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { Principal } from '../common/principal';
import type { RequestContext } from '../graphql/graphql.context';
import { CurrentPrincipal, toConnection } from '../graphql/graphql.helpers';
import { groupedBy } from '../graphql/graphql.loaders';
import { encodeCursor } from '../common/pagination';
import { WebhookService } from './webhook.service';
import {
  WebhookAttemptType,
  WebhookDeliveryConnection,
  WebhookDeliveryType,
  WebhookSecretType,
} from './webhook.types';

@Resolver(() => WebhookDeliveryType)
export class WebhookResolver {
  constructor(private readonly service: WebhookService) {}

  @Query(() => WebhookSecretType, {
    description:
      "The key that signs the viewer's webhook messages (a team token: its team's); created on first use.",
  })
  async webhookSecret(@CurrentPrincipal() principal: Principal) {
    return WebhookSecretType.from(await this.service.secret(principal));
  }

  @Mutation(() => WebhookSecretType, {
    description: 'A new signing key; the previous one signs messages too (a second signature) for 24 hours.',
  })
  async rotateWebhookSecret(@CurrentPrincipal() principal: Principal) {
    return WebhookSecretType.from(await this.service.rotate(principal));
  }

  @Query(() => WebhookDeliveryConnection, {
    description: "The webhook messages about one of the viewer's jobs, newest first.",
  })
  async webhookDeliveries(
    @CurrentPrincipal() principal: Principal,
    @Arg('jobId', () => ID) jobId: string,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return toConnection(
      await this.service.deliveries(principal, jobId, { first, after }),
      WebhookDeliveryType.from,
      encodeCursor,
    );
  }

  @FieldResolver(() => [WebhookAttemptType], { description: 'Every attempt, in order.' })
  async attempts(@Root() delivery: WebhookDeliveryType, @Ctx() ctx: RequestContext) {
    const rows = await groupedBy(
      ctx.loaders,
      'webhooks.attempts',
      (ids) => this.service.attemptsOf(ids),
      (a) => a.delivery.id,
    ).load(delivery.id);
    return rows.map(WebhookAttemptType.from);
  }
}
