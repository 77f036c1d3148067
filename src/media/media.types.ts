import { GraphQLSafeInt } from 'graphql-scalars';
import { Field, ID, InputType, ObjectType, registerEnumType } from 'type-graphql';
import type { PgTimeText } from '../common/time';
import { Connection } from '../graphql/graphql.helpers';
import type { MediaAsset } from './media.entity';
import type { MediaRow, MediaService } from './media.service';

export enum MediaTypeEnum {
  SOURCE_ASSET = 'source_asset',
  TARGET_ASSET = 'target_asset',
}
registerEnumType(MediaTypeEnum, {
  name: 'MediaType',
  description: 'SOURCE_ASSET: uploaded; TARGET_ASSET: written by a job.',
});

export enum MediaStatusEnum {
  LIVE = 'live',
}
registerEnumType(MediaStatusEnum, { name: 'MediaStatus' });

@ObjectType('MediaAsset', { description: 'An uploaded file or a file a job wrote.' })
export class MediaAssetType {
  @Field(() => ID)
  id!: string;

  @Field(() => String, { description: "The client's file name, sanitised (display only)." })
  imageName!: string;

  @Field(() => String, { description: 'Public URL of the file: `{cdn_url}/media/<id>.<ext>`.' })
  url!: string;

  @Field(() => String, { description: 'The URL below the CDN root: `media/<id>.<ext>`.' })
  mediaKey!: string;

  @Field(() => MediaStatusEnum)
  status!: MediaStatusEnum;

  @Field(() => MediaTypeEnum)
  type!: MediaTypeEnum;

  @Field(() => [String])
  tags!: string[];

  @Field(() => String, { description: 'Sniffed from the content.' })
  contentType!: string;

  @Field(() => GraphQLSafeInt, { description: 'Size in bytes.' })
  size!: number;

  @Field(() => String, { description: 'Hex SHA-256 of the content; also its ETag.' })
  sha256!: string;

  @Field(() => ID, { nullable: true, description: 'The job that wrote a target asset.' })
  jobId!: string | null;

  /** A Date, or PostgreSQL's text of it (a list's rows: see `MediaRow`). */
  @Field(() => Date)
  createdAt!: Date | PgTimeText;

  @Field(() => Date)
  updatedAt!: Date | PgTimeText;

  /**
   * The MediaAsset properties the given fields are made of (a list reads only those columns);
   * null when a field is not known here (then every column is read). Remembered per set of
   * fields (selectedFieldsAt gives the same set for the same document).
   */
  static propsOf(fields: ReadonlySet<string>): readonly string[] | null {
    let props = propsBySelection.get(fields);
    if (props === undefined) propsBySelection.set(fields, (props = sourcesOf(fields)));
    return props;
  }

  static from(media: MediaService) {
    const base = media.baseUrl;
    return (a: MediaAsset | MediaRow): MediaAssetType => new MediaAssetView(a, media, base);
  }
}

/**
 * A MediaAsset as the schema shows it, read through from its entity or list row when a field is
 * asked: a page of 50 no longer copies 13 properties per item, and `url` is the root before the
 * `mediaKey` made once (each was made apart, with the root's text, for every item).
 */
class MediaAssetView implements MediaAssetType {
  private key: string | undefined;

  constructor(
    private readonly a: MediaAsset | MediaRow,
    private readonly media: MediaService,
    private readonly base: string,
  ) {}

  get id() {
    return this.a.id;
  }
  get imageName() {
    return this.a.imageName;
  }
  get url() {
    return this.base + this.mediaKey;
  }
  get mediaKey() {
    return (this.key ??= this.media.keyOf(this.a));
  }
  get status() {
    return this.a.status as MediaStatusEnum;
  }
  get type() {
    return this.a.type as MediaTypeEnum;
  }
  get tags() {
    return this.a.tags;
  }
  get contentType() {
    return this.a.contentType;
  }
  get size() {
    return this.a.size;
  }
  get sha256() {
    return this.a.sha256 ?? '';
  }
  get jobId() {
    return this.a.jobId;
  }
  get createdAt() {
    return this.a.createdAt;
  }
  get updatedAt() {
    return this.a.updatedAt;
  }
}

/** The MediaAsset properties each field of MediaAssetType is made of (see `from`). */
const FIELD_SOURCES: Record<string, readonly (keyof MediaAsset)[]> = {
  id: ['id'],
  imageName: ['imageName'],
  url: ['id', 'extension'],
  mediaKey: ['id', 'extension'],
  status: ['status'],
  type: ['type'],
  tags: ['tags'],
  contentType: ['contentType'],
  size: ['size'],
  sha256: ['sha256'],
  jobId: ['jobId'],
  createdAt: ['createdAt'],
  updatedAt: ['updatedAt'],
};

const propsBySelection = new WeakMap<ReadonlySet<string>, readonly string[] | null>();

function sourcesOf(fields: Iterable<string>): string[] | null {
  const props = new Set<string>(['id', 'createdAt']); // the keyset of the page and its cursor
  for (const field of fields) {
    if (field === '__typename') continue;
    if (!Object.hasOwn(FIELD_SOURCES, field)) return null;
    for (const p of FIELD_SOURCES[field]) props.add(p);
  }
  return [...props];
}

export const MediaAssetConnection = Connection(MediaAssetType, 'MediaAsset');

@InputType()
export class MediaFilterInput {
  @Field(() => [String], { nullable: true, description: 'Assets carrying any of these tags.' })
  tags?: string[] | null;

  @Field(() => [String], { nullable: true, description: 'Leaves out assets carrying any of these tags.' })
  excludeTags?: string[] | null;

  @Field(() => MediaTypeEnum, { nullable: true })
  type?: MediaTypeEnum | null;
}
