import { useCallback, useEffect, useRef, useState } from 'react';
import { gql, messageOf } from '../api/graphql';
import { onReconnect, subscribe } from '../api/live';
import {
  JobEventsDocument,
  JobListDocument,
  type JobListQuery,
  type JobOrder,
  type JobRowFragment,
} from '../generated/graphql';
import { Link } from '../router';
import { ErrorNote, Loading, StatusBadge, when } from '../ui/common';
import { VirtualList } from '../ui/VirtualList';

const PAGE = 50;
const ROW_HEIGHT = 64;

/** A job's cost as a person reads it: the exact amount, `so far` while it may still run. */
export function costText(c: { amount: string; currency: string; final: boolean }): string {
  return `${c.amount} ${c.currency}${c.final ? '' : ' so far'}`;
}

/** The list's orders (GraphQL JobOrder); by cost, the API lists ended jobs only. */
const ORDERS: { value: JobOrder; label: string }[] = [
  { value: 'CREATED_AT', label: 'Newest first' },
  { value: 'COST', label: 'Most expensive first' },
  { value: 'COST_ASC', label: 'Cheapest first' },
];

/** Newest first, like the API: by creation time, then id. */
const newerFirst = (a: JobRowFragment, b: JobRowFragment) =>
  a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1;

/**
 * The principal's jobs, paged (more load as the list scrolls to its end), each row updated in place
 * by the `jobs` subscription. Events are applied once per animation frame, so a burst of them
 * over a long list costs one render.
 */
export function JobsPage() {
  const [jobs, setJobs] = useState<JobRowFragment[] | null>(null);
  const [order, setOrder] = useState<JobOrder>('CREATED_AT');
  // Read by the subscription's handler, which lives as long as the page.
  const orderRef = useRef(order);
  orderRef.current = order;
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
  const reload = useCallback(
    async (count: number) => {
      page.current.loading = true;
      try {
        const rows: JobRowFragment[] = [];
        let after: string | null = null;
        let hasNextPage = true;
        while (hasNextPage && rows.length < Math.max(count, PAGE)) {
          const first = Math.min(200, Math.max(count, PAGE) - rows.length);
          const { jobs: conn }: JobListQuery = await gql(JobListDocument, { first, after, orderBy: order });
          rows.push(...conn.nodes);
          after = conn.pageInfo.endCursor;
          hasNextPage = conn.pageInfo.hasNextPage;
        }
        // Answered for an order since left: the new order's reload shows its own.
        if (orderRef.current !== order) return;
        page.current = { endCursor: after, hasNextPage, loading: false };
        loaded.current = rows.length;
        setJobs(rows);
        setError('');
      } catch (err) {
        page.current.loading = false;
        setError(messageOf(err));
      }
    },
    [order],
  );

  const more = useCallback(async () => {
    const p = page.current;
    if (p.loading || !p.hasNextPage) return;
    p.loading = true;
    try {
      const { jobs: conn } = await gql(JobListDocument, {
        first: PAGE,
        after: p.endCursor,
        orderBy: order,
      });
      if (orderRef.current !== order) return;
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
  }, [order]);

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
        // Jobs not shown yet (started elsewhere) join the list at their place; by cost, their
        // place is the server's to say (a new job has no final cost): they show on reload.
        if (events.size && orderRef.current === 'CREATED_AT') {
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
        <div className="page-head-actions">
          <span>
            <label htmlFor="jobs-order">Sort</label>{' '}
            <select
              id="jobs-order"
              value={order}
              onChange={(e) => {
                setJobs(null);
                setOrder(e.target.value as JobOrder);
              }}
            >
              {ORDERS.map((o) => (
                <option key={o.value} value={o.value}>
                  {o.label}
                </option>
              ))}
            </select>
          </span>
          <Link className="button" href="/models">
            Run a model
          </Link>
        </div>
      </div>
      <ErrorNote>{error}</ErrorNote>
      {jobs === null ? (
        <Loading what="jobs" />
      ) : jobs.length === 0 ? (
        <p className="empty">
          {order === 'CREATED_AT' ? (
            <>
              No jobs yet. <Link href="/models">Pick a model</Link> and run it over your{' '}
              <Link href="/files">media</Link>.
            </>
          ) : (
            'No job has ended yet: by cost, only ended jobs are listed.'
          )}
        </p>
      ) : (
        <VirtualList
          items={jobs}
          rowHeight={ROW_HEIGHT}
          height={height}
          keyOf={(j) => j.id}
          label={`Jobs, ${ORDERS.find((o) => o.value === order)!.label.toLowerCase()}`}
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
