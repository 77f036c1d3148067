import type { Readable } from 'node:stream';

/** An inclusive byte range, as HTTP Range requests name them. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * Where media bytes live. Keys are flat names (`<media_id>.<ext>`); adapters decide the layout.
 * Nothing here knows about owners or rows: the media service keeps those.
 */
export interface Storage {
  readonly kind: 'local' | 's3';
  /**
   * Streams `body` into `key`. Rejects when `body` fails, and then leaves nothing under `key`;
   * with StoreFull (storage.space.ts) when the store has no room.
   */
  write(key: string, body: Readable, contentType: string): Promise<void>;
  /** The object's bytes (or one range of them); null when there is no such object. */
  read(key: string, range?: ByteRange): Promise<Readable | null>;
  /** Removes the object; removing a missing object is not an error. */
  delete(key: string): Promise<void>;
  /** Where a process on this machine can read the object, when the adapter has such a path. */
  localPath(key: string): string | null;
  /** Bytes still free in the store, where it can tell (a local file system); null otherwise. */
  freeBytes(): Promise<number | null>;
}
