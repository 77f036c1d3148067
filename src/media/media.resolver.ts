import { GraphQLUpload, type FileUpload } from 'graphql-upload-minimal';
import type { GraphQLResolveInfo } from 'graphql';
import { Arg, ID, Info, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { Principal } from '../common/principal';
import { encodeCursor } from '../common/pagination';
import { CurrentPrincipal, selectedFieldsAt, toConnection } from '../graphql/graphql.helpers';
import { MediaService } from './media.service';
import { MediaAssetConnection, MediaAssetType, MediaFilterInput } from './media.types';

const NO_FIELDS: ReadonlySet<string> = new Set();

@Resolver(() => MediaAssetType)
export class MediaResolver {
  private readonly view: ReturnType<typeof MediaAssetType.from>;

  constructor(private readonly service: MediaService) {
    this.view = MediaAssetType.from(service);
  }

  @Query(() => MediaAssetConnection, { description: "The owner's media, newest first." })
  async media(
    @CurrentPrincipal() principal: Principal,
    @Info() info: GraphQLResolveInfo,
    @Arg('filter', () => MediaFilterInput, { nullable: true }) filter?: MediaFilterInput,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ) {
    return toConnection(
      // Only the columns the items' fields are made of (the list's rows are its largest cost).
      await this.service.list(
        principal,
        filter ?? {},
        { first, after },
        MediaAssetType.propsOf(selectedFieldsAt(info, 'nodes', 'edges.node') ?? NO_FIELDS),
      ),
      this.view,
      encodeCursor,
    );
  }

  @Query(() => MediaAssetType)
  async mediaAsset(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return this.view(await this.service.get(principal, id));
  }

  @Query(() => String, { description: 'The `{cdn_url}` root, ending in a slash.' })
  mediaBaseUrl(@CurrentPrincipal() _principal: Principal): string {
    return this.service.baseUrl;
  }

  @Mutation(() => MediaAssetType, {
    description:
      'Uploads one file (GraphQL multipart request). Send the header `apollo-require-preflight: true`.',
  })
  async uploadMedia(
    @CurrentPrincipal() principal: Principal,
    @Arg('file', () => GraphQLUpload) file: Promise<FileUpload>,
    @Arg('tags', () => [String], { nullable: true }) tags?: string[],
  ) {
    const { createReadStream, filename } = await file;
    return this.view(await this.service.upload(principal, { stream: createReadStream(), filename, tags }));
  }

  @Mutation(() => MediaAssetType, { description: 'Replaces the tags of an asset.' })
  async updateMediaTags(
    @CurrentPrincipal() principal: Principal,
    @Arg('id', () => ID) id: string,
    @Arg('tags', () => [String]) tags: string[],
  ) {
    return this.view(await this.service.updateTags(principal, id, tags));
  }

  @Mutation(() => ID, { description: 'Deletes an asset and its file; answers its id.' })
  async deleteMedia(@CurrentPrincipal() principal: Principal, @Arg('id', () => ID) id: string) {
    return (await this.service.delete(principal, id)).id;
  }
}
