import {
  ArrayType,
  BigIntType,
  Entity,
  Index,
  ManyToOne,
  PrimaryKey,
  Property,
  type Opt,
} from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { OwnerType } from '../common/principal';

/** `source_asset`: uploaded by a user; `target_asset`: written by a job. */
export type MediaType = 'source_asset' | 'target_asset';

/**
 * `uploading`: bytes are being stored (hidden everywhere); `live`: visible and served;
 * `deleting`: being removed (hidden). Rows left uploading or deleting by a crash are swept.
 */
export type MediaStatus = 'uploading' | 'live' | 'deleting';

@Entity({ tableName: 'media_assets' })
// Only live rows: the lists read no other (sqlPage's `where`).
@Index({
  name: 'media_assets_live_owner_index',
  expression:
    'create index "media_assets_live_owner_index" on "media_assets" ("owner_type", "owner_id", "created_at", "id") where "status" = \'live\'',
})
export class MediaAsset {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text' })
  ownerType!: OwnerType;

  @Property({ type: 'uuid' })
  ownerId!: string;

  @Property({ type: 'text' })
  type: Opt<MediaType> = 'source_asset';

  @Property({ type: 'text' })
  @Index()
  status: Opt<MediaStatus> = 'uploading';

  /** The client's file name, sanitised; never used to store or serve the file. */
  @Property({ type: 'text' })
  imageName!: string;

  /** Extension of the stored object, from the sniffed content. */
  @Property({ type: 'text' })
  extension!: string;

  @Property({ type: 'text' })
  contentType!: string;

  @Property({ type: new BigIntType('number') })
  size: Opt<number> = 0;

  /** Hex SHA-256 of the content; also the file's strong ETag. Null until the upload completes. */
  @Property({ type: 'text', nullable: true })
  sha256: string | null = null;

  @Property({ type: ArrayType, columnType: 'text[]', default: '{}' })
  tags: Opt<string[]> = [];

  /** The job that wrote a target asset. */
  @Property({ type: 'uuid', nullable: true })
  @Index()
  jobId: string | null = null;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', onUpdate: () => new Date() })
  updatedAt: Opt<Date> = new Date();
}

/** The stored object's name, and the last path segment of its URL. */
export function storageKey(asset: Pick<MediaAsset, 'id' | 'extension'>): string {
  return `${asset.id}.${asset.extension}`;
}

/**
 * One tag of a live media asset, in the media list's order per owner and tag: a list of one tag
 * reads only the rows it answers, however rare the tag (docs/media.md, "Listing, tags, update,
 * delete"). Written by triggers on media_assets (Migration20261127060100_media_tags), never by
 * the service; its rows go with their asset.
 */
@Entity({ tableName: 'media_tags' })
@Index({ properties: ['media'] })
export class MediaTag {
  @PrimaryKey({ type: 'text' })
  ownerType!: OwnerType;

  @PrimaryKey({ type: 'uuid' })
  ownerId!: string;

  @PrimaryKey({ type: 'text' })
  tag!: string;

  @PrimaryKey({ type: 'datetime' })
  createdAt!: Date;

  @ManyToOne(() => MediaAsset, { primary: true, fieldName: 'id', deleteRule: 'cascade' })
  media!: MediaAsset;
}
