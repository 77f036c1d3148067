import { useEffect, useState } from 'react';
import { gql, messageOf } from '../api/graphql';
import { MonthUsageDocument, type MonthUsageQuery } from '../generated/graphql';
import { BarChart } from '../ui/BarChart';
import { ErrorNote, Loading } from '../ui/common';

/** The billing month of GB-months: 730 hours. */
const SECONDS_PER_MONTH = 730 * 3600;

/**
 * An amount as a person reads it: two decimals, but a small non-zero amount keeps two
 * significant digits (0.00042) instead of reading as nothing.
 */
export function amount(n: number): string {
  if (n === 0) return '0.00';
  return Math.abs(n) >= 0.01 ? n.toFixed(2) : n.toPrecision(2);
}

const SIZES: [string, number][] = [
  ['TB', 1e12],
  ['GB', 1e9],
  ['MB', 1e6],
  ['KB', 1e3],
  ['B', 1],
];
const SPANS: [string, number][] = [
  ['months', SECONDS_PER_MONTH],
  ['days', 86400],
  ['hours', 3600],
  ['minutes', 60],
  ['seconds', 1],
];

/**
 * Bytes stored over time in the largest units that give at least 1: "856 KB-months",
 * "2.0 KB-minutes", never "0.000000 GB-months".
 */
export function storageAmount(byteSeconds: number): string {
  if (byteSeconds <= 0) return 'nothing';
  for (const [span, seconds] of SPANS)
    for (const [size, bytes] of SIZES) {
      const n = byteSeconds / (seconds * bytes);
      if (n >= 1) return `${n >= 100 ? n.toFixed(0) : n.toPrecision(2)} ${size}-${span}`;
    }
  return `${byteSeconds.toPrecision(2)} B-seconds`;
}

/**
 * The chart's series: money when any day costs at least a cent; else machine-seconds; else the
 * storage kept; with nothing at all, the chart says so.
 */
function chartOf(usage: MonthUsageQuery['usage']) {
  const day = (s: string) => s.slice(0, 10);
  const money = usage.series.map((b) => ({
    label: day(b.start),
    values: [Number(b.computeAmount), Number(b.storageAmount)],
  }));
  if (money.some((b) => b.values.some((v) => v > 0)))
    return { bars: money, unit: usage.currency, keys: ['compute', 'storage'], format: amount };
  const compute = usage.series.map((b) => ({ label: day(b.start), values: [Number(b.computeSeconds)] }));
  if (compute.some((b) => b.values[0] > 0))
    return {
      bars: compute,
      unit: 'machine-seconds',
      keys: ['compute'],
      format: (n: number) => (n >= 10 ? n.toFixed(0) : n.toPrecision(2)),
    };
  return {
    bars: usage.series.map((b) => ({ label: day(b.start), values: [Number(b.storageByteSeconds)] })),
    unit: 'storage',
    keys: ['storage'],
    format: (n: number) => (n === 0 ? '0' : storageAmount(n)),
  };
}

/** This month's billing usage: a daily chart and a table per model. */
export function UsagePage() {
  const [usage, setUsage] = useState<MonthUsageQuery['usage'] | null>(null);
  const [budget, setBudget] = useState<MonthUsageQuery['budget'] | null>(null);
  const [quota, setQuota] = useState<MonthUsageQuery['quota'] | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    gql(MonthUsageDocument).then(
      (r) => {
        setUsage(r.usage);
        setBudget(r.budget);
        setQuota(r.quota);
      },
      (err: unknown) => setError(messageOf(err)),
    );
  }, []);
  if (!usage) return error ? <ErrorNote>{error}</ErrorNote> : <Loading what="usage" />;
  const month = new Date(usage.period.start).toLocaleDateString(undefined, {
    month: 'long',
    year: 'numeric',
    timeZone: 'UTC',
  });
  const total = Number(usage.total);
  const used = Number(usage.storage.byteSeconds) > 0 || usage.models.length > 0;
  const chart = chartOf(usage);
  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <p data-testid="usage-summary">
        {month}:{' '}
        <strong>
          {total === 0 && used ? `less than 0.01 ${usage.currency}` : `${amount(total)} ${usage.currency}`}
        </strong>{' '}
        so far (storage: {storageAmount(Number(usage.storage.byteSeconds))},{' '}
        {amount(Number(usage.storage.amount))} {usage.currency}).
      </p>
      {budget ? <BudgetNote budget={budget} /> : null}
      {quota ? <QuotaNote quota={quota} /> : null}
      {chart.unit !== usage.currency && chart.bars.some((b) => b.values[0] > 0) ? (
        <p className="muted">
          Every day so far costs less than 0.01 {usage.currency}: the chart shows the {chart.unit} used
          instead.
        </p>
      ) : null}
      <BarChart {...chart} />
      <h2>Per model</h2>
      {usage.models.length === 0 ? (
        <p className="muted">No compute this month.</p>
      ) : (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Jobs</th>
                <th scope="col">Machine-seconds</th>
                <th scope="col">Amount ({usage.currency})</th>
              </tr>
            </thead>
            <tbody>
              {usage.models.map((m) => (
                <tr key={m.modelId}>
                  <td>{m.name ?? 'deleted model'}</td>
                  <td>{m.jobs}</td>
                  <td>{Number(m.seconds).toFixed(1)}</td>
                  <td>
                    {Number(m.amount) === 0 && Number(m.seconds) > 0 ? '< 0.01' : amount(Number(m.amount))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** The month's budget: spent and committed against the limit (docs/governance.md). */
function BudgetNote({ budget: b }: { budget: MonthUsageQuery['budget'] }) {
  if (b.monthlyLimit === null)
    return (
      <p data-testid="budget" className="muted">
        No monthly budget set (spent {b.spent} {b.currency}, committed {b.committed} {b.currency}).
      </p>
    );
  const share = (Number(b.spent) / Number(b.monthlyLimit)) * 100;
  return (
    <p data-testid="budget">
      Budget: <strong>{b.spent}</strong> spent and {b.committed} committed of {b.monthlyLimit} {b.currency} (
      {share.toFixed(0)} %; {b.action === 'BLOCK' ? 'new work that could pass it is refused' : 'notify only'}
      ).
      <meter min={0} max={Number(b.monthlyLimit)} value={Number(b.spent)} aria-label="budget spent" />
    </p>
  );
}

/**
 * The owner's quotas with what is in use now: jobs starting or running, and machines per type
 * (docs/governance.md). Jobs over a quota wait queued; the job page says which quota holds them.
 */
function QuotaNote({ quota: q }: { quota: MonthUsageQuery['quota'] }) {
  const of = (used: number, limit: number | null | undefined) =>
    limit === null || limit === undefined ? `${used} (no limit)` : `${used} of ${limit}`;
  return (
    <div data-testid="quota">
      <h2>Quotas in use</h2>
      <ul>
        <li>Jobs starting or running: {of(q.runningJobs, q.maxRunningJobs)}</li>
        {q.machines.map((m) => (
          <li key={m.machineType}>
            Machines of type {m.machineType}: {of(m.inUse, m.limit)}
          </li>
        ))}
      </ul>
    </div>
  );
}
