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
