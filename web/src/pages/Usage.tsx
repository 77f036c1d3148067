import { useEffect, useState } from 'react';
import { gql, messageOf } from '../api/graphql';
import { MonthUsageDocument, type MonthUsageQuery } from '../generated/graphql';
import { BarChart } from '../ui/BarChart';
import { ErrorNote, Loading } from '../ui/common';

/** This month's billing usage: a daily chart and a table per model. */
export function UsagePage() {
  const [usage, setUsage] = useState<MonthUsageQuery['usage'] | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    gql(MonthUsageDocument).then(
      (r) => setUsage(r.usage),
      (err: unknown) => setError(messageOf(err)),
    );
  }, []);
  if (!usage) return error ? <ErrorNote>{error}</ErrorNote> : <Loading what="usage" />;
  const month = new Date(usage.period.start).toLocaleDateString(undefined, {
    month: 'long',
    year: 'numeric',
    timeZone: 'UTC',
  });
  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <p>
        {month}: <strong>{usage.total}</strong> {usage.currency} so far (storage {usage.storage.gbMonths}{' '}
        GB-months, {usage.storage.amount} {usage.currency}).
      </p>
      <BarChart
        currency={usage.currency}
        bars={usage.series.map((b) => ({
          label: b.start.slice(0, 10),
          compute: Number(b.computeAmount),
          storage: Number(b.storageAmount),
        }))}
      />
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
                  <td>{m.amount}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
