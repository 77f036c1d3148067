import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { requirePrincipal, type Principal } from '../common/principal';
import { encodeCursor, mapPage } from '../common/pagination';
import type { RequestContext } from '../graphql/graphql.context';
import { CurrentPrincipal, toConnection } from '../graphql/graphql.helpers';
import { mayChange, type ModelService, type ReactionKind, type ReactionStats } from './model.service';
import type { ModelVersion } from './model.entity';
import {
  CreateModelInput,
  ModelConnection,
  ModelFilterInput,
  ModelType,
  ModelVersionConnection,
  ModelVersionType,
  UpdateModelInput,
} from './model.types';

@Resolver(() => ModelType)
export class ModelResolver {
  constructor(private readonly service: ModelService) {}

  @Query(() => ModelConnection, {
    description: 'The catalogue, newest first: public models and the private ones the principal may see.',
  })
  async models(
    @CurrentPrincipal() principal: Principal,
    @Arg('filter', () => ModelFilterInput, { nullable: true }) filter?: ModelFilterInput,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return toConnection(
      await this.service.list(principal, filter ?? {}, { first, after }),
      ModelType.from,
      encodeCursor,
    );
  }

  @Query(() => ModelType)
  async model(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return ModelType.from(await this.service.get(principal, id));
  }

  @Query(() => ModelVersionType, { description: 'One version of a model (NOT_FOUND for another model).' })
  async modelVersion(
    @CurrentPrincipal() principal: Principal,
    @Arg('modelId', () => ID) modelId: string,
    @Arg('id', () => ID) id: string,
  ) {
    return ModelVersionType.from(await this.service.version(principal, modelId, id));
  }

  @Query(() => ModelConnection, { description: "Models the viewer's user likes, latest like first." })
  async likedModels(
    @CurrentPrincipal() principal: Principal,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return this.reacted(principal, 'like', first, after);
  }

  @Query(() => ModelConnection, { description: "Models the viewer's user follows, latest follow first." })
  async followedModels(
    @CurrentPrincipal() principal: Principal,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return this.reacted(principal, 'follow', first, after);
  }

  @Mutation(() => ModelType, { description: 'Adds a model to the catalogue, owned by the principal.' })
  async createModel(@CurrentPrincipal() principal: Principal, @Arg('input') input: CreateModelInput) {
    return ModelType.from(await this.service.create(principal, input));
  }

  @Mutation(() => ModelType, { description: 'Changes the given fields; owner only.' })
  async updateModel(
    @CurrentPrincipal() principal: Principal,
    @Arg('id', () => ID) id: string,
    @Arg('input') input: UpdateModelInput,
  ) {
    return ModelType.from(await this.service.update(principal, id, input));
  }

  @Mutation(() => ID, {
    description: 'Deletes a model with its likes and follows; owner only. Answers its id.',
  })
  async deleteModel(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return this.service.delete(principal, id);
  }

  @Mutation(() => ModelType, { description: 'Idempotent.' })
  async likeModel(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return ModelType.from(await this.service.react(principal, id, 'like', true));
  }

  @Mutation(() => ModelType, { description: 'Idempotent.' })
  async unlikeModel(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return ModelType.from(await this.service.react(principal, id, 'like', false));
  }

  @Mutation(() => ModelType, { description: 'Idempotent.' })
  async followModel(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return ModelType.from(await this.service.react(principal, id, 'follow', true));
  }

  @Mutation(() => ModelType, { description: 'Idempotent.' })
  async unfollowModel(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return ModelType.from(await this.service.react(principal, id, 'follow', false));
  }

  @FieldResolver(() => Int)
  async likeCount(@Root() model: ModelType, @Ctx() ctx: RequestContext) {
    return (await this.stats(ctx, 'like', model.id)).count;
  }

  @FieldResolver(() => Int)
  async followCount(@Root() model: ModelType, @Ctx() ctx: RequestContext) {
    return (await this.stats(ctx, 'follow', model.id)).count;
  }

  @FieldResolver(() => Boolean, { description: "Whether the viewer's user likes the model." })
  async viewerLikes(@Root() model: ModelType, @Ctx() ctx: RequestContext) {
    return (await this.stats(ctx, 'like', model.id)).viewer;
  }

  @FieldResolver(() => Boolean, { description: "Whether the viewer's user follows the model." })
  async viewerFollows(@Root() model: ModelType, @Ctx() ctx: RequestContext) {
    return (await this.stats(ctx, 'follow', model.id)).viewer;
  }

  @FieldResolver(() => Boolean, { description: 'Whether the viewer may update and delete the model.' })
  viewerCanEdit(@Root() model: ModelType, @CurrentPrincipal() principal: Principal) {
    return mayChange(principal, model);
  }

  @FieldResolver(() => [ID], {
    nullable: true,
    description:
      'Teams that see and run the model while it is private; null unless the viewer may change it.',
  })
  sharedWith(@Root() model: ModelType, @CurrentPrincipal() principal: Principal) {
    return mayChange(principal, model) ? model.sharedWith : null;
  }

  @FieldResolver(() => ModelVersionConnection, { description: 'Its versions, newest first.' })
  async versions(
    @Root() model: ModelType,
    @CurrentPrincipal() principal: Principal,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    const page = await this.service.versions(principal, model.id, { first, after });
    return toConnection(page, ModelVersionType.from, (v) => String(v.sequence));
  }

  @FieldResolver(() => ModelVersionType, { description: 'What a deployment of the model runs now.' })
  async latestVersion(@Root() model: ModelType, @Ctx() ctx: RequestContext) {
    const version = await ctx.loaders
      .get<string, ModelVersion | null>('models.latestVersion', (ids) => this.service.latestVersions(ids))
      .load(model.id);
    // Every model has one (made with it, or by the migration for older ones).
    if (!version) throw new Error(`model ${model.id} has no version`);
    return ModelVersionType.from(version);
  }

  /** Counts and viewer flags of all models in the answer, batched into one query per kind. */
  private stats(ctx: RequestContext, kind: ReactionKind, modelId: string): Promise<ReactionStats> {
    const principal = requirePrincipal(ctx.principal);
    return ctx.loaders
      .get<string, ReactionStats>(`models.${kind}s`, (ids) =>
        this.service.reactionStats(principal, kind, ids),
      )
      .load(modelId);
  }

  private async reacted(principal: Principal, kind: ReactionKind, first?: number, after?: string) {
    const page = await this.service.reacted(principal, kind, { first, after });
    return toConnection(
      mapPage(page, (r) => ({ model: ModelType.from(r.model), cursor: encodeCursor(r) })),
      (x) => x.model,
      (x) => x.cursor,
    );
  }
}
