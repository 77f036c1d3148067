import type { MikroORM } from '@mikro-orm/postgresql';
import type { Readable } from 'node:stream';
import { assertOwned, ownedBy, ownerOf, type Owner, type Principal } from '../common/principal';
import type { AuditLog } from '../teams/audit.service';
import { authorize } from '../teams/team.roles';
import { AppError } from '../common/errors';
import { prefixedColumns, textArray, textTimesReader, type WithTextTimes } from '../db/rows';
import { isUuid } from '../common/ids';
import type { Logger } from '../common/logger';
import type { Page, PageArgs } from '../common/pagination';
import { sqlPage, type SqlCondition } from '../db/sql-page';
import { normaliseTags } from '../common/tags';
import type { ByteRange, Storage } from '../storage/storage.port';
import { StoreFull } from '../storage/storage.space';
import { MediaAsset, storageKey, type MediaType } from './media.entity';
import { interrupted, Meter } from './media.meter';
import { sanitiseFileName, sanitiseRelativePath, sniff, SNIFF_BYTES } from './media.sniff';

export interface UploadInput {
  stream: Readable;
  filename?: string | null;
  /**
   * Tags, or a promise of them that settles once the rest of the request has been read
   * (multipart fields may follow the file). A rejected promise aborts the upload.
   */
  tags?: unknown;
}

export interface MediaFilter {
  tags?: string[] | null;
  excludeTags?: string[] | null;
  type?: MediaType | null;
}

/** An asset as a list reads it: its times as text (only printed), unread columns undefined. */
export type MediaRow = WithTextTimes<MediaAsset>;

export interface MediaServiceOptions {
  cdnUrl: string;
  maxUploadBytes: number;
  /** Told of each upload's end (metrics): stored with its size, or refused. */
  onUpload?: (outcome: 'stored' | 'failed', bytes: number, seconds: number) => void;
}

/** Rows a crash left `uploading` for this long are abandoned uploads (uploads may be slow). */
const ABANDONED_UPLOAD_MS = 24 * 3600_000;
/** `deleting` rows older than this lost their process mid-delete. */
const ABANDONED_DELETE_MS = 60_000;

const STORED_NAME = /^([0-9a-f-]{36})\.([a-z0-9]{1,16})$/;

export class MediaService {
  constructor(
    private readonly orm: MikroORM,
    private readonly storage: Storage,
    private readonly opts: MediaServiceOptions,
    private readonly log: Logger,
    /** Deletions for a team leave audit records (none in scripts). */
    private readonly audit: AuditLog | null = null,
  ) {}

  /** The `{cdn_url}` root, ending in a slash: root + `media_key` is a file's URL. */
  get baseUrl(): string {
    return `${this.opts.cdnUrl}/`;
  }

  /** The path of a file below the root: `media/<id>.<ext>`. */
  keyOf(asset: Pick<MediaAsset, 'id' | 'extension'>): string {
    return `media/${storageKey(asset)}`;
  }

  urlOf(asset: Pick<MediaAsset, 'id' | 'extension'>): string {
    return this.baseUrl + this.keyOf(asset);
  }

  /**
   * Streams a file into storage and records it. The row stays `uploading` (invisible) until
   * every byte is stored; any failure removes both the row and the bytes.
   */
  async upload(principal: Principal, input: UploadInput): Promise<MediaAsset> {
    authorize(principal, 'write', 'upload media');
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const asset = await this.store(ownerOf(principal), input, 'source_asset');
      this.opts.onUpload?.('stored', asset.size, seconds());
      return asset;
    } catch (err) {
      this.opts.onUpload?.('failed', 0, seconds());
      throw err;
    } finally {
      // Whatever happened, nothing keeps reading the client's bytes after this.
      if (!input.stream.destroyed && !input.stream.readableEnded) input.stream.destroy();
    }
  }

  /**
   * Stores a file a job wrote as a `target_asset` of the job's owner (the first output takes the
   * deployment's `target_asset_id`). Same streaming, sniffing, limits and cleanup as uploads.
   */
  async storeJobOutput(
    owner: Owner,
    input: { stream: Readable; filename: string; jobId: string; id?: string },
  ): Promise<MediaAsset> {
    // Kept `uploading` (invisible) until the job's `succeeded` transition publishes its outputs.
    return this.store(owner, { stream: input.stream, filename: input.filename }, 'target_asset', {
      id: input.id,
      jobId: input.jobId,
    });
  }

  /** Removes every output of a job, published or not (a job that did not succeed keeps none). */
  async discardJobOutputs(jobId: string): Promise<void> {
    const assets = await this.orm.em.fork().find(MediaAsset, { jobId });
    for (const asset of assets) await this.discard(asset);
  }

  private async store(
    owner: Owner,
    input: UploadInput,
    type: MediaType,
    job: { id?: string; jobId: string } | null = null,
  ): Promise<MediaAsset> {
    const tagsLater = input.tags instanceof Promise ? input.tags : null;
    // Awaited after the bytes are stored; until then a rejection must not count as unhandled.
    tagsLater?.catch(() => undefined);
    const tagsNow = tagsLater ? null : normaliseTags(input.tags);
    let sourceError: unknown;
    input.stream.once('error', (err) => (sourceError ??= err));

    const meter = new Meter(input.stream, this.opts.maxUploadBytes, SNIFF_BYTES);
    let asset: MediaAsset | undefined;
    try {
      const { extension, contentType } = await sniff(await meter.head(), input.filename ?? '');
      const em = this.orm.em.fork();
      const created = em.create(MediaAsset, {
        ...(job?.id ? { id: job.id } : {}),
        jobId: job?.jobId ?? null,
        ownerType: owner.type,
        ownerId: owner.id,
        type,
        // Outputs keep their place in the job's output folder; uploads keep only a file name.
        imageName: job ? sanitiseRelativePath(input.filename ?? '') : sanitiseFileName(input.filename),
        extension,
        contentType,
      });
      await em.flush();
      asset = created;
      await this.storage.write(storageKey(asset), meter, contentType);
      const tags = tagsNow ?? normaliseTags(await tagsLater);
      em.assign(asset, {
        status: job ? 'uploading' : 'live',
        size: meter.bytes,
        sha256: await meter.digest(),
        tags,
        createdAt: new Date(),
      });
      await em.flush();
      return asset;
    } catch (err) {
      const cause = meter.errored ?? sourceError ?? err;
      meter.destroy();
      input.stream.destroy();
      meter.discard();
      const failed = asset;
      if (failed)
        await this.discard(failed).catch((e) =>
          this.log.error({ err: e, id: failed.id }, 'upload cleanup failed'),
        );
      // Not a bug but an operator's matter: said at warn, with the room that is left.
      if (err instanceof StoreFull)
        this.log.warn(
          { store: err.store, freeBytes: err.freeBytes, jobId: job?.jobId },
          `${err.store} store full: a file was refused`,
        );
      throw cause instanceof AppError ? cause : sourceError ? interrupted(sourceError) : err;
    }
  }

  /**
   * `props`: the properties the caller will read (with `id` and `createdAt`), the only columns
   * read; the others are left undefined. Null reads them all.
   */
  async list(
    principal: Principal,
    filter: MediaFilter,
    args: PageArgs,
    props: readonly string[] | null = null,
  ): Promise<Page<MediaRow>> {
    const owner = ownerOf(principal);
    // The busiest read of the service, written as SQL: building it through the ORM cost more
    // than running it. Rows are plain, read-only data. The keyset index holds only live rows
    // (a partial index), so a list without filters reads no row it does not answer. The global
    // manager: sqlPage only takes its pool and logger, and a fork per page cost about 3% of the
    // REST list's CPU.
    const select = props ? this.columnsOf(props) : prefixedColumns(this.orm, MediaAsset, 'media_assets', '');
    const read = textTimesReader(this.orm, MediaAsset);
    const include = normaliseTags(filter.tags, 'tags');
    const exclude = normaliseTags(filter.excludeTags, 'excludeTags');
    if (include.length === 1 && !exclude.length && !filter.type)
      // One tag alone: its rows in the list's order (media_tags, live assets only), then each
      // asset by id, so the page reads only the rows it answers, however rare the tag.
      return sqlPage(
        this.orm.em,
        {
          from: 'media_tags t',
          alias: 't',
          join: [{ table: 'media_assets', as: 'media_assets', on: 'media_assets.id = t.id' }],
          select,
        },
        [
          ['t.owner_type = ?', owner.type],
          ['t.owner_id = ?', owner.id],
          ['t.tag = ?', include[0]],
        ],
        args,
        read,
      );
    // Other filters are checked per row, within the scan budget: a GIN index would find tagged
    // rows but not in the list's order, so a common tag would read every one of them per page.
    const where: SqlCondition[] = [
      ['owner_type = ?', owner.type],
      ['owner_id = ?', owner.id],
      [`status = 'live'`],
    ];
    return sqlPage(
      this.orm.em,
      { from: 'media_assets', select },
      { where, filter: filterChecks(filter) },
      args,
      read,
    );
  }

  /**
   * The ids of the principal's live assets matching `filter` (the list's semantics: any of
   * `tags`, none of `excludeTags`), newest first, at most `limit`, in one statement (a batch's
   * selection; docs/batches.md).
   */
  async idsMatching(principal: Principal, filter: MediaFilter, limit: number): Promise<string[]> {
    const owner = ownerOf(principal);
    const checks = filterChecks(filter);
    const rows = await this.orm.em.fork().execute(
      `select id from media_assets where owner_type = ? and owner_id = ? and status = 'live'
       ${checks.map(([c]) => `and ${c}`).join(' ')} order by created_at desc, id desc limit ?`,
      [owner.type, owner.id, ...checks.flatMap(([, ...v]) => v), limit],
    );
    return rows.map((r) => r.id as string);
  }

  /** The select list of `props`, built once per array (propsOf gives one per selection). */
  private columnsOf(props: readonly string[]): string {
    let columns = this.columns.get(props);
    if (columns === undefined)
      this.columns.set(props, (columns = prefixedColumns(this.orm, MediaAsset, 'media_assets', '', props)));
    return columns;
  }
  private readonly columns = new WeakMap<readonly string[], string>();

  async get(principal: Principal, id: string): Promise<MediaAsset> {
    const asset = isUuid(id) ? await this.orm.em.fork().findOne(MediaAsset, { id, status: 'live' }) : null;
    return assertOwned(asset, principal, 'media asset');
  }

  /** Replaces the tags. */
  async updateTags(principal: Principal, id: string, tags: unknown): Promise<MediaAsset> {
    authorize(principal, 'write', 'tag media');
    const normalised = normaliseTags(tags);
    const em = this.orm.em.fork();
    const asset = assertOwned(
      isUuid(id) ? await em.findOne(MediaAsset, { id, status: 'live' }) : null,
      principal,
      'media asset',
    );
    asset.tags = normalised;
    await em.flush();
    return asset;
  }

  /** Hides the asset at once, then removes its bytes and its row. */
  async delete(principal: Principal, id: string): Promise<MediaAsset> {
    authorize(principal, 'write', 'delete media');
    const asset = await this.get(principal, id);
    const hidden = await this.orm.em.fork().transactional(async (em) => {
      const n = await em.nativeUpdate(
        MediaAsset,
        { id: asset.id, status: 'live' },
        // updated_at starts the sweeper's grace: a delete in progress is not swept under it.
        { status: 'deleting', updatedAt: new Date() },
      );
      if (n)
        this.audit?.recordForTeam(em, principal, {
          action: 'media.deleted',
          targetType: 'media',
          targetId: asset.id,
        });
      return n;
    });
    if (!hidden) throw AppError.notFound('media asset'); // a concurrent delete won
    // If storage is down, the row stays `deleting` (invisible) and the sweeper finishes later.
    await this.discard(asset).catch((err) =>
      this.log.warn({ err, id: asset.id }, 'media bytes not removed yet; the sweeper retries'),
    );
    return asset;
  }

  /** The principal's live assets among `ids`; anything else (foreign, missing, not live) is left out. */
  async ownedLive(principal: Principal, ids: readonly string[]): Promise<Map<string, MediaAsset>> {
    const wanted = ids.filter(isUuid);
    if (!wanted.length) return new Map();
    const rows = await this.orm.em
      .fork()
      .find(MediaAsset, { id: { $in: wanted }, status: 'live', ...ownedBy(principal) });
    return new Map(rows.map((r) => [r.id, r]));
  }

  /** Live assets by id, whoever owns them (the caller has checked access to what refers to them). */
  async byIds(ids: readonly string[]): Promise<MediaAsset[]> {
    return ids.length ? this.orm.em.fork().find(MediaAsset, { id: { $in: [...ids] }, status: 'live' }) : [];
  }

  /** Whether an asset row of this id exists, in any state (an id is never used twice). */
  async idTaken(id: string): Promise<boolean> {
    return (await this.orm.em.fork().count(MediaAsset, { id })) > 0;
  }

  /** The live outputs of jobs, oldest first; one job's outputs share a time, so then by name. */
  async byJobIds(jobIds: readonly string[]): Promise<MediaAsset[]> {
    return this.orm.em
      .fork()
      .find(
        MediaAsset,
        { jobId: { $in: [...jobIds] }, status: 'live' },
        { orderBy: { createdAt: 'asc', imageName: 'asc', id: 'asc' } },
      );
  }

  /** Where the executor's processes can read an asset on this machine (local storage), or null. */
  localPathOf(asset: MediaAsset): string | null {
    return this.storage.localPath(storageKey(asset));
  }

  /** The live asset a `/media/<id>.<ext>` URL names, or null. */
  async findServable(fileName: string): Promise<MediaAsset | null> {
    const m = STORED_NAME.exec(fileName);
    if (!m || !isUuid(m[1])) return null;
    const asset = await this.orm.em.fork().findOne(MediaAsset, { id: m[1], status: 'live' });
    return asset && asset.extension === m[2] ? asset : null;
  }

  read(asset: MediaAsset, range?: ByteRange): Promise<Readable | null> {
    return this.storage.read(storageKey(asset), range);
  }

  /** Finishes what crashed processes left: abandoned uploads and interrupted deletes. */
  async sweep(now = new Date()): Promise<number> {
    const em = this.orm.em.fork();
    const stale = await em.find(
      MediaAsset,
      {
        $or: [
          { status: 'uploading', updatedAt: { $lt: new Date(now.getTime() - ABANDONED_UPLOAD_MS) } },
          { status: 'deleting', updatedAt: { $lt: new Date(now.getTime() - ABANDONED_DELETE_MS) } },
        ],
      },
      { limit: 500 },
    );
    let removed = 0;
    for (const asset of stale) {
      try {
        await this.discard(asset);
        removed++;
      } catch (err) {
        this.log.warn({ err, id: asset.id }, 'sweep could not remove media yet');
      }
    }
    return removed;
  }

  private async discard(asset: MediaAsset): Promise<void> {
    await this.storage.delete(storageKey(asset));
    await this.orm.em.fork().nativeDelete(MediaAsset, { id: asset.id });
  }
}

/** The list's filters as conditions on `media_assets` (tags normalised as the list does). */
function filterChecks(filter: MediaFilter): SqlCondition[] {
  const include = normaliseTags(filter.tags, 'tags');
  const exclude = normaliseTags(filter.excludeTags, 'excludeTags');
  const checks: SqlCondition[] = [];
  if (filter.type) checks.push(['type = ?', filter.type]);
  if (include.length) checks.push(['tags && ?::text[]', textArray(include)]);
  if (exclude.length) checks.push(['not (tags && ?::text[])', textArray(exclude)]);
  return checks;
}
