import { useCallback, useEffect, useRef, useState } from 'react';
import { gql, messageOf } from '../api/graphql';
import { onReconnect, subscribe } from '../api/live';
import {
  JobEventsDocument,
  JobListDocument,
  type JobListQuery,
  type JobRowFragment,
} from '../generated/graphql';
import { Link } from '../router';
import { ErrorNote, Loading, StatusBadge, when } from '../ui/common';
import { VirtualList } from '../ui/VirtualList';

const PAGE = 50;
const ROW_HEIGHT = 64;

/** Newest first, like the API: by creation time, then id. */
/** A job's cost as a person reads it: the exact amount, `so far` while it may still run. */
export function costText(c: { amount: string; currency: string; final: boolean }): string {
  return `${c.amount} ${c.currency}${c.final ? '' : ' so far'}`;
}

const newerFirst = (a: JobRowFragment, b: JobRowFragment) =>
  a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1;

/**
 * The principal's jobs, paged (more load as the list scrolls to its end), each row updated in place
 * by the `jobs` subscription. Events are applied once per animation frame, so a burst of them
 * over a long list costs one render.
 */
export function JobsPage() {
  const [jobs, setJobs] = useState<JobRowFragment[] | null>(null);
  const [error, setError] = useState('');
  const page = useRef<{ endCursor: string | null; hasNextPage: boolean; loading: boolean }>({
    endCursor: null,
    hasNextPage: false,
    loading: false,
  });
  const pendingEvents = useRef(new Map<string, JobRowFragment>());
  const frame = useRef(0);
  const loaded = useRef(0);

  /** Reads the first `count` jobs again (at least one page), replacing what is shown. */
  const reload = useCallback(async (count: number) => {
    page.current.loading = true;
    try {
      const rows: JobRowFragment[] = [];
      let after: string | null = null;
      let hasNextPage = true;
      while (hasNextPage && rows.length < Math.max(count, PAGE)) {
        const first = Math.min(200, Math.max(count, PAGE) - rows.length);
        const { jobs: conn }: JobListQuery = await gql(JobListDocument, { first, after });
        rows.push(...conn.nodes);
        after = conn.pageInfo.endCursor;
        hasNextPage = conn.pageInfo.hasNextPage;
      }
      page.current = { endCursor: after, hasNextPage, loading: false };
      loaded.current = rows.length;
      setJobs(rows);
      setError('');
    } catch (err) {
      page.current.loading = false;
      setError(messageOf(err));
    }
  }, []);

  const more = useCallback(async () => {
    const p = page.current;
    if (p.loading || !p.hasNextPage) return;
    p.loading = true;
    try {
      const { jobs: conn } = await gql(JobListDocument, { first: PAGE, after: p.endCursor });
      page.current = {
        endCursor: conn.pageInfo.endCursor,
        hasNextPage: conn.pageInfo.hasNextPage,
        loading: false,
      };
      setJobs((old) => {
        const seen = new Set((old ?? []).map((j) => j.id));
        const next = [...(old ?? []), ...conn.nodes.filter((j) => !seen.has(j.id))];
        loaded.current = next.length;
        return next;
      });
    } catch (err) {
      p.loading = false;
      setError(messageOf(err));
    }
  }, []);

  useEffect(() => {
    const flush = () => {
      frame.current = 0;
      const events = pendingEvents.current;
      pendingEvents.current = new Map();
      setJobs((old) => {
        if (!old) return old;
        let changed = false;
        const next = old.map((j) => {
          const e = events.get(j.id);
          if (!e) return j;
          events.delete(j.id);
          changed = true;
          return e.updatedAt >= j.updatedAt ? e : j;
        });
        // Jobs not shown yet (started elsewhere) join the list at their place.
        if (events.size) {
          changed = true;
          next.push(...events.values());
          next.sort(newerFirst);
        }
        return changed ? next : old;
      });
    };
    const stop = subscribe(JobEventsDocument, {}, ({ jobs: job }) => {
      pendingEvents.current.set(job.id, job);
      if (!frame.current) frame.current = requestAnimationFrame(flush);
    });
    const stopReconnect = onReconnect(() => void reload(loaded.current));
    void reload(PAGE);
    return () => {
      stop();
      stopReconnect();
      cancelAnimationFrame(frame.current);
    };
  }, [reload]);

  const height = Math.max(320, window.innerHeight - 200);
  return (
    <section aria-labelledby="jobs-title">
      <div className="page-head">
        <h1 id="jobs-title">Jobs</h1>
        <Link className="button" href="/models">
          Run a model
        </Link>
      </div>
      <ErrorNote>{error}</ErrorNote>
      {jobs === null ? (
        <Loading what="jobs" />
      ) : jobs.length === 0 ? (
        <p className="empty">
          No jobs yet. <Link href="/models">Pick a model</Link> and run it over your{' '}
          <Link href="/files">media</Link>.
        </p>
      ) : (
        <VirtualList
          items={jobs}
          rowHeight={ROW_HEIGHT}
          height={height}
          keyOf={(j) => j.id}
          label="Jobs, newest first"
          onEnd={more}
          render={(j) => (
            <Link className="job-row" href={`/jobs/${j.id}`} data-job-id={j.id}>
              <span className="job-name">
                <strong>{j.deployment.name}</strong>
                {/* The model only when the run's name does not already say it. */}
                {j.model?.name === j.deployment.name ? null : (
                  <span className="muted">{j.model?.name ?? 'deleted model'}</span>
                )}
              </span>
              <span className="job-when muted">{when(j.createdAt)}</span>
              <span className="job-cost muted" title={j.cost.final ? 'cost' : 'cost so far'}>
                {costText(j.cost)}
              </span>
              <StatusBadge status={j.status} />
            </Link>
          )}
        />
      )}
      {jobs && jobs.length > 0 ? (
        <p className="muted small">
          {jobs.length} job{jobs.length === 1 ? '' : 's'} shown
          {page.current.hasNextPage ? '; scroll for more' : ''}.
        </p>
      ) : null}
    </section>
  );
}
