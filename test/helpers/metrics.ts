import type { TestApp } from './app';

/** The value of a sample `name{labels}` of a Prometheus text (labels given must all match), or undefined. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

/** How many requests the app's metrics counted for a method, route pattern and status. */
export async function requestsCounted(
  t: TestApp,
  method: string,
  route: string,
  status: number,
): Promise<number> {
  const text = await t.runtime.metrics.registry.getSingleMetricAsString('http_request_duration_seconds');
  return sample(text, 'http_request_duration_seconds_count', { method, route, status: String(status) }) ?? 0;
}
