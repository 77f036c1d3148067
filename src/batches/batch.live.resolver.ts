import { Arg, ID, Resolver, Root, Subscription } from 'type-graphql';
import { AppError } from '../common/errors';
import { requirePrincipal } from '../common/principal';
import type { RequestContext } from '../graphql/graphql.context';
import type { BatchLive } from './batch.live';
import type { BatchView } from './batch.service';
import { BatchType } from './batch.types';

declare module '../graphql/graphql.context' {
  interface RequestContext {
    /** Live batch progress for subscriptions (websocket contexts only; one feed per process). */
    batchLive?: BatchLive;
  }
}

type Subscribed = { args: { id: string }; context: RequestContext };

@Resolver(() => BatchType)
export class BatchLiveResolver {
  @Subscription(() => BatchType, {
    description:
      "One batch: as it is now, then its counts as they change (at most 4 updates a second), the last when it completes or is canceled. Another owner's batch is NOT_FOUND.",
    subscribe: ({ args, context }: Subscribed) => {
      if (!context.batchLive) throw new AppError('UNAVAILABLE', 'subscriptions are served over websockets');
      return context.batchLive.iterate(requirePrincipal(context.principal), args.id);
    },
  })
  batchUpdated(@Root() view: BatchView, @Arg('id', () => ID) _id: string): BatchType {
    return BatchType.from(view);
  }
}
