import { useCallback, useEffect, useState } from 'react';
import { gql, messageOf } from '../api/graphql';
import { onReconnect, subscribe } from '../api/live';
import { accessToken } from '../api/session';
import {
  BatchJobListDocument,
  BatchListDocument,
  BatchLiveDocument,
  BatchModelsDocument,
  BatchOneDocument,
  CancelBatchRunDocument,
  CreateBatchRunDocument,
  RetryBatchRunDocument,
  type BatchItemFragment,
  type BatchJobListQuery,
  type JobStatus,
} from '../generated/graphql';
import { Link, navigate } from '../router';
import { ErrorNote, Loading, StatusBadge, when } from '../ui/common';

const STATES = ['queued', 'starting', 'running', 'succeeded', 'failed', 'canceled'] as const;
type Counts = BatchItemFragment['counts'];

const ended = (c: Counts) => c.succeeded + c.failed + c.canceled;
const percent = (b: BatchItemFragment) => (b.total ? Math.floor((100 * ended(b.counts)) / b.total) : 100);

/** Seconds from the batch's creation to its end (or now), as "1 min 5 s". */
function elapsed(b: BatchItemFragment, nowMs: number): string {
  const end = b.finishedAt ? new Date(b.finishedAt).getTime() : nowMs;
  const s = Math.max(0, Math.round((end - new Date(b.createdAt).getTime()) / 1000));
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}

function Progress({ batch: b }: { batch: BatchItemFragment }) {
  return (
    <progress
      className="batch-progress"
      max={b.total}
      value={ended(b.counts)}
      aria-label={`${b.name}: ${percent(b)}% ended`}
    >
      {percent(b)}%
    </progress>
  );
}

/** `/batches`: the acting principal's batches, newest first. */
export function BatchesPage() {
  const [items, setItems] = useState<BatchItemFragment[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState('');
  const load = useCallback(async (after: string | null) => {
    try {
      const page = (await gql(BatchListDocument, { first: 50, after })).batches;
      setItems((old) => (after ? [...(old ?? []), ...page.nodes] : page.nodes));
      setNext(page.pageInfo.hasNextPage ? (page.pageInfo.endCursor ?? null) : null);
    } catch (err) {
      setError(messageOf(err));
    }
  }, []);
  useEffect(() => void load(null), [load]);
  return (
    <section>
      <h1>Batches</h1>
      <p className="muted">A model run over many media at once. Start one from the Media page.</p>
      <ErrorNote>{error}</ErrorNote>
      {items === null ? (
        <Loading what="your batches" />
      ) : items.length === 0 ? (
        <p className="empty">
          No batches yet: select media on the <Link href="/files">Media</Link> page and run a model over them.
        </p>
      ) : (
        <table className="batches" aria-label="Your batches">
          <thead>
            <tr>
              <th>Name</th>
              <th>State</th>
              <th>Progress</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {items.map((b) => (
              <tr key={b.id}>
                <td>
                  <Link href={`/batches/${b.id}`}>{b.name}</Link>
                </td>
                <td>{b.status.toLowerCase()}</td>
                <td>
                  <Progress batch={b} /> {ended(b.counts)} / {b.total}
                </td>
                <td>{when(b.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next ? (
        <button type="button" onClick={() => void load(next)}>
          More batches
        </button>
      ) : null}
    </section>
  );
}

/** `/batches/<id>`: progress (live), counts by state, elapsed time, cancel, retry failed, results, jobs by state. */
export function BatchPage({ id }: { id: string }) {
  const [batch, setBatch] = useState<BatchItemFragment | null>(null);
  const [error, setError] = useState('');
  const [nowMs, setNow] = useState(Date.now());
  const [filter, setFilter] = useState<JobStatus | ''>('');
  const [jobs, setJobs] = useState<BatchJobListQuery['batchJobs']['nodes'] | null>(null);
  const [busy, setBusy] = useState(false);

  const read = useCallback(async () => {
    try {
      setBatch((await gql(BatchOneDocument, { id })).batch);
    } catch (err) {
      setError(messageOf(err));
    }
  }, [id]);
  // Subscribed before the first read, so no change falls between the two; read again after a reconnection.
  useEffect(() => {
    const stop = subscribe(BatchLiveDocument, { id }, (d) => setBatch(d.batchUpdated), setError);
    void read();
    const off = onReconnect(() => void read());
    return () => {
      stop();
      off();
    };
  }, [id, read]);
  useEffect(() => {
    if (batch?.status !== 'RUNNING') return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [batch?.status]);
  const countsKey = batch ? JSON.stringify(batch.counts) : '';
  useEffect(() => {
    void (async () => {
      try {
        const page = await gql(BatchJobListDocument, { id, first: 100, status: filter || null });
        setJobs(page.batchJobs.nodes);
      } catch (err) {
        setError(messageOf(err));
      }
    })();
  }, [id, filter, countsKey]);

  const act = async (what: 'cancel' | 'retry') => {
    setBusy(true);
    try {
      setBatch(
        what === 'cancel'
          ? (await gql(CancelBatchRunDocument, { id })).cancelBatch
          : (await gql(RetryBatchRunDocument, { id })).retryBatch,
      );
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  // The zip needs the access token, so it is fetched and handed to the browser as a file.
  const download = async () => {
    try {
      const res = await fetch(`/api/v1/batches/${id}/results`, {
        headers: { authorization: `Bearer ${await accessToken()}` },
      });
      if (!res.ok) throw new Error(`the service answered ${res.status}`);
      const url = URL.createObjectURL(await res.blob());
      const a = document.createElement('a');
      a.href = url;
      a.download = `batch-${id}-results.zip`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      setError(messageOf(err));
    }
  };

  if (!batch)
    return (
      <section>
        <ErrorNote>{error}</ErrorNote>
        {error ? null : <Loading what="the batch" />}
      </section>
    );
  return (
    <section aria-label={`Batch ${batch.name}`}>
      <p>
        <Link href="/batches">All batches</Link>
      </p>
      <h1>{batch.name}</h1>
      <p>
        <span className="batch-status" data-status={batch.status}>
          {batch.status.toLowerCase()}
        </span>{' '}
        · {ended(batch.counts)} of {batch.total} ended · elapsed {elapsed(batch, nowMs)}
      </p>
      <Progress batch={batch} />
      <dl className="batch-counts" aria-label="Items by state">
        {STATES.map((s) => (
          <div key={s}>
            <dt>{s}</dt>
            <dd data-state={s}>{batch.counts[s]}</dd>
          </div>
        ))}
      </dl>
      <ErrorNote>{error}</ErrorNote>
      <div className="actions">
        {batch.status === 'RUNNING' ? (
          <button type="button" className="danger" disabled={busy} onClick={() => void act('cancel')}>
            Cancel
          </button>
        ) : null}
        {batch.counts.failed > 0 ? (
          <button type="button" disabled={busy} onClick={() => void act('retry')}>
            Retry failed ({batch.counts.failed})
          </button>
        ) : null}
        <a
          href={`/api/v1/batches/${id}/results`}
          className="button"
          onClick={(e) => {
            e.preventDefault();
            void download();
          }}
        >
          Download results (zip)
        </a>
      </div>
      <h2>Jobs</h2>
      <label htmlFor="batch-job-state">Show</label>{' '}
      <select
        id="batch-job-state"
        value={filter}
        onChange={(e) => setFilter(e.target.value as JobStatus | '')}
      >
        <option value="">every state</option>
        {STATES.map((s) => (
          <option key={s} value={s.toUpperCase()}>
            {s}
          </option>
        ))}
      </select>
      {jobs === null ? (
        <Loading what="its jobs" />
      ) : jobs.length === 0 ? (
        <p className="empty">No job in this state.</p>
      ) : (
        <ul className="batch-jobs" aria-label="Its jobs">
          {jobs.map((j) => (
            <li key={j.id}>
              <Link href={`/jobs/${j.id}`}>{j.id.slice(0, 8)}</Link> <StatusBadge status={j.status} />{' '}
              {j.error ? <span className="muted small">{j.error}</span> : null}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/**
 * The Media page's "Run a model over N media": a model with a file argument, run over the media
 * picked (`mediaIds`) or over every file with the filter's tags (`tags`), as one batch.
 */
export function RunOverMedia({
  mediaIds,
  tags,
  count,
}: {
  mediaIds: string[];
  tags: string[];
  count: number;
}) {
  const [models, setModels] = useState<{ id: string; name: string; arg: string }[] | null>(null);
  const [model, setModel] = useState('');
  const [error, setError] = useState('');
  const [open, setOpen] = useState(false);
  useEffect(() => {
    if (!open || models) return;
    void (async () => {
      try {
        const found = (await gql(BatchModelsDocument, { first: 100 })).models.nodes.flatMap((m) => {
          // Only a model with exactly one required argument, a file, runs over media alone.
          const required = m.args.filter((a) => !a.optional);
          const file = m.args.find((a) => a.type === 'file');
          return file && required.every((a) => a === file)
            ? [{ id: m.id, name: m.name, arg: file.name }]
            : [];
        });
        setModels(found);
        setModel(found[0]?.id ?? '');
      } catch (err) {
        setError(messageOf(err));
      }
    })();
  }, [open, models]);
  const run = async () => {
    const chosen = models?.find((m) => m.id === model);
    if (!chosen) return;
    try {
      const inputs = mediaIds.length ? { arg: chosen.arg, mediaIds } : { arg: chosen.arg, tags };
      const { createBatch } = await gql(CreateBatchRunDocument, {
        input: { name: `${chosen.name} over ${count} media`, modelId: chosen.id, inputs },
      });
      navigate(`/batches/${createBatch.id}`);
    } catch (err) {
      setError(messageOf(err));
    }
  };
  if (!count) return null;
  return (
    <div className="run-over-media">
      {open ? (
        <>
          {models === null ? (
            <Loading what="models" />
          ) : models.length ? (
            <>
              <label htmlFor="batch-model">Model</label>{' '}
              <select id="batch-model" value={model} onChange={(e) => setModel(e.target.value)}>
                {models.map((m) => (
                  <option key={m.id} value={m.id}>
                    {m.name}
                  </option>
                ))}
              </select>{' '}
              <button type="button" className="primary" onClick={() => void run()}>
                Run over {count} media
              </button>
            </>
          ) : (
            <p className="muted">No model takes a file alone.</p>
          )}
          <ErrorNote>{error}</ErrorNote>
        </>
      ) : (
        <button type="button" onClick={() => setOpen(true)}>
          Run a model over {count} media
        </button>
      )}
    </div>
  );
}
