import DataLoader from 'dataloader';

/**
 * The DataLoaders of one request. A module asks for its loader by a stable key and gives the
 * batch function the first time; later calls in the same request share the loader, so field
 * resolvers on a list batch into one query per key.
 */
export class Loaders {
  private readonly byKey = new Map<string, DataLoader<unknown, unknown>>();

  get<K, V>(key: string, batch: (keys: readonly K[]) => Promise<readonly (V | Error)[]>): DataLoader<K, V> {
    let loader = this.byKey.get(key);
    if (!loader) {
      loader = new DataLoader<K, V>(batch) as DataLoader<unknown, unknown>;
      this.byKey.set(key, loader);
    }
    return loader as DataLoader<K, V>;
  }
}

/** The request's loader of rows by id, one `fetch` per batch; ids without a row load as null. */
export function byId<T extends { id: string }>(
  loaders: Loaders,
  key: string,
  fetch: (ids: readonly string[]) => Promise<T[]>,
): DataLoader<string, T | null> {
  return loaders.get<string, T | null>(key, async (ids) => {
    const rows = new Map((await fetch(ids)).map((r) => [r.id, r]));
    return ids.map((id) => rows.get(id) ?? null);
  });
}

/** The request's loader of row lists by a key (say, the outputs of each job), one `fetch` per batch. */
export function groupedBy<T>(
  loaders: Loaders,
  key: string,
  fetch: (keys: readonly string[]) => Promise<T[]>,
  keyOf: (row: T) => string,
): DataLoader<string, T[]> {
  return loaders.get<string, T[]>(key, async (keys) => {
    const groups = new Map<string, T[]>();
    for (const row of await fetch(keys)) {
      const k = keyOf(row);
      groups.set(k, [...(groups.get(k) ?? []), row]);
    }
    return keys.map((k) => groups.get(k) ?? []);
  });
}
