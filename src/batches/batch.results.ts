import type { MikroORM } from '@mikro-orm/postgresql';
import { PassThrough, Readable } from 'node:stream';
import { ZipFile } from 'yazl';
import type { Principal } from '../common/principal';
import type { JobOutput } from '../jobs/job.entity';
import type { Storage } from '../storage/storage.port';
import type { BatchService, BatchView } from './batch.service';

/** Items read per statement: the zip is written page by page, never the whole batch at once. */
const PAGE = 500;

/** One item as its results show it: its latest job (a retry replaces the job it retries). */
interface ItemRow {
  item: number;
  jobId: string;
  status: string;
  output: JobOutput | null;
  error: string | null;
  sourceMediaId: string | null;
  sourceName: string | null;
}

/** A results archive being written: its file name and its bytes. */
export interface BatchArchive {
  fileName: string;
  stream: Readable;
}

/**
 * `GET /api/v1/batches/{id}/results` (docs/batches.md, "Results"): one zip of every result file,
 * each under `<item>-<source file name>/<output name>`, and `manifest.json` last. Written as it
 * is sent: the items are read by pages of PAGE, each file opened from storage only when its turn
 * comes (yazl's lazy entries, piped with backpressure), so memory does not grow with the bytes;
 * yazl keeps only each entry's central-directory record, and switches to zip64 when sizes,
 * offsets or the number of entries need it.
 */
export class BatchResults {
  constructor(
    private readonly orm: MikroORM,
    private readonly batches: BatchService,
    private readonly storage: Storage,
    /** The `{cdn_url}` root result URLs hang off. */
    private readonly baseUrl: string,
  ) {}

  /** The archive of the principal's batch `id`; another owner's is 404 (before any byte is sent). */
  async archive(principal: Principal, id: string): Promise<BatchArchive> {
    const view = await this.batches.get(principal, id);
    const zip = new ZipFile();
    const width = String(Math.max(view.batch.total - 1, 0)).length;
    void (async () => {
      for (let from = 0; from < view.batch.total; from += PAGE)
        for (const row of await this.items(view.batch.id, from, from + PAGE))
          for (const [name, file] of this.entries(row, width))
            zip.addReadStreamLazy(
              name,
              { size: file.size, compress: false, mtime: view.batch.createdAt },
              (cb) =>
                this.storage.read(file.mediaKey.replace(/^media\//, '')).then(
                  (s) => cb(null, s ?? Readable.from([])),
                  (err) => cb(err, Readable.from([])),
                ),
            );
      zip.addReadStreamLazy('manifest.json', { mtime: new Date() }, (cb) =>
        cb(null, Readable.from(this.manifest(view, width))),
      );
      zip.end();
    })().catch((err) => zip.emit('error', err));
    // A PassThrough gives the stream Node's own type (yazl's is the older interface). A file
    // that cannot be read cuts the stream short: the client sees a broken download, never a wrong zip.
    const stream = (zip.outputStream as Readable).pipe(new PassThrough());
    zip.on('error', (err: Error) => stream.destroy(err));
    return { fileName: `batch-${view.batch.id}-results.zip`, stream };
  }

  /**
   * Every output file of an item with its name in the archive: a job that did not succeed keeps
   * no outputs (JobFiles discards them), so only a succeeded item has files.
   */
  private entries(row: ItemRow, width: number): [string, JobOutput['files'][number]][] {
    if (row.status !== 'succeeded') return [];
    const dir = `${String(row.item).padStart(width, '0')}-${safe(row.sourceName ?? 'item')}`;
    const seen = new Set<string>();
    return (row.output?.files ?? []).map((f) => {
      let name = safe(f.name);
      // Two outputs of one job with the same name stay apart.
      for (let k = 2; seen.has(name); k++) name = `${k}-${safe(f.name)}`;
      seen.add(name);
      return [`${dir}/${name}`, f];
    });
  }

  /** manifest.json, written page by page: the batch, then each item. */
  private async *manifest(view: BatchView, width: number): AsyncGenerator<string> {
    const b = view.batch;
    yield `{"batch":${JSON.stringify({
      id: b.id,
      name: b.name,
      model_id: b.modelId,
      status: view.status,
      total: b.total,
      counts: view.counts,
      created_at: b.createdAt,
      started_at: view.startedAt,
      finished_at: view.finishedAt,
    })},\n"items":[`;
    let first = true;
    for (let from = 0; from < b.total; from += PAGE)
      for (const row of await this.items(b.id, from, from + PAGE)) {
        const files = this.entries(row, width);
        yield `${first ? '\n' : ',\n'}${JSON.stringify({
          item: row.item,
          job_id: row.jobId,
          status: row.status,
          source_media_id: row.sourceMediaId,
          source_name: row.sourceName,
          files: files.map(([name]) => name),
          result_urls: files.map(([, f]) => this.baseUrl + f.mediaKey),
          result: row.output?.result ?? null,
          error: row.error,
        })}`;
        first = false;
      }
    yield '\n]}\n';
  }

  /** The items `from` (inclusive) to `to` of the batch, each by its latest job, in one statement. */
  private async items(batchId: string, from: number, to: number): Promise<ItemRow[]> {
    const rows: Record<string, unknown>[] = await this.orm.em.fork().execute(
      `select distinct on (j.batch_item) j.batch_item, j.id, j.status, j.output, j.error,
              d.source_asset_id, m.image_name
       from jobs j join deployments d on d.id = j.deployment_id
       left join media_assets m on m.id = d.source_asset_id
       where j.batch_id = ? and j.batch_item >= ? and j.batch_item < ?
       order by j.batch_item, j.created_at desc, j.id desc`,
      [batchId, from, to],
    );
    return rows.map((r) => ({
      item: r.batch_item as number,
      jobId: r.id as string,
      status: r.status as string,
      output: (typeof r.output === 'string' ? JSON.parse(r.output) : r.output) as JobOutput | null,
      error: r.error as string | null,
      sourceMediaId: r.source_asset_id as string | null,
      sourceName: r.image_name as string | null,
    }));
  }
}

/** A name usable as one path segment of a zip entry. */
function safe(name: string): string {
  return name.replace(/[/\\\0]/g, '_').replace(/^\.+/, '_') || '_';
}
