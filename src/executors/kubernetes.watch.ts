import type { Logger } from '../common/logger';
import {
  backoffMs,
  KubernetesApiError,
  type KubernetesClient,
  type WatchedKind,
  type WatchEvent,
} from './kubernetes.client';

export interface WatchedObject {
  metadata?: { name?: string; uid?: string; resourceVersion?: string };
}

export interface ResourceWatchHandlers<T> {
  /** An object appeared or changed; after a re-list, every object whose version moved. */
  changed(object: T): void;
  /** An object is gone: a DELETED event, or missing from a re-list. */
  removed(object: T): void;
}

export interface ResourceWatchOptions {
  /** The server ends each watch after this long; a new one continues from the last version. */
  timeoutSeconds: number;
  log: Logger;
}

type WatchEnd = 'ended' | 'gone' | 'failed';

/**
 * One list-and-watch of a kind of object by label selector, as client-go's reflector does it: list
 * (remember every object and the list's version), watch from that version, and when a watch ends,
 * continue from the last version seen (events or bookmarks). When the server no longer has that
 * version (410 Gone), or the watch failed, list again and compare with what is known: changed
 * objects are reported, and objects that went away meanwhile are reported removed, so no
 * transition is lost, only intermediate states of one object may be skipped.
 */
export class ResourceWatch<T extends WatchedObject> {
  private readonly known = new Map<string, T>();
  private resourceVersion = '';
  private stopWatch: (() => void) | null = null;
  /** Ends the current watchOnce (on stop). */
  private endWatch: (() => void) | null = null;
  private wake: (() => void) | null = null;
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly client: KubernetesClient,
    private readonly kind: WatchedKind,
    private readonly labelSelector: string,
    private readonly handlers: ResourceWatchHandlers<T>,
    private readonly opts: ResourceWatchOptions,
  ) {}

  /** Lists once (its errors, such as a Role that does not allow it, are thrown), then watches. */
  async start(): Promise<void> {
    await this.relist();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.endWatch?.();
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    let failures = 0;
    let listNext = false;
    while (!this.stopped) {
      try {
        if (listNext) await this.relist();
        const started = Date.now();
        const end = await this.watchOnce();
        listNext = end !== 'ended';
        // A watch that keeps ending at once must not turn into a busy loop.
        const quick = Date.now() - started < 1000;
        if (end === 'failed' || (end === 'ended' && quick)) await this.pause(failures++);
        else failures = 0;
      } catch (err) {
        if (this.stopped) break;
        listNext = true;
        if (err instanceof KubernetesApiError && err.status === 410) continue;
        this.opts.log.warn({ err, kind: this.kind }, 'Kubernetes watch failed; listing again');
        await this.pause(failures++);
      }
    }
  }

  /** Watches from the last version until the watch ends; says how it ended. */
  private watchOnce(): Promise<WatchEnd> {
    return new Promise<WatchEnd>((resolve, reject) => {
      let settled = false;
      // A connection that died without a word: no event, not even the server's timeout.
      let idle: NodeJS.Timeout | undefined;
      const finish = (end: WatchEnd) => {
        if (settled) return;
        settled = true;
        clearTimeout(idle);
        this.stopWatch?.();
        this.stopWatch = null;
        this.endWatch = null;
        resolve(end);
      };
      this.endWatch = () => finish('ended');
      const alive = () => {
        clearTimeout(idle);
        idle = setTimeout(() => finish('ended'), (this.opts.timeoutSeconds + 30) * 1000);
        idle.unref();
      };
      const onEvent = (event: WatchEvent) => {
        alive();
        if (event.type === 'ERROR') {
          const status = event.object as { code?: number; message?: string };
          if (status.code !== 410)
            this.opts.log.warn({ kind: this.kind, status }, 'Kubernetes watch answered an error');
          return finish(status.code === 410 ? 'gone' : 'failed');
        }
        const object = event.object as T;
        const version = object.metadata?.resourceVersion;
        if (version) this.resourceVersion = version;
        if (event.type === 'BOOKMARK') return;
        const name = object.metadata?.name;
        if (!name) return;
        if (event.type === 'DELETED') {
          this.known.delete(name);
          this.handlers.removed(object);
        } else {
          this.known.set(name, object);
          this.handlers.changed(object);
        }
      };
      alive();
      this.client
        .watch(
          this.kind,
          {
            labelSelector: this.labelSelector,
            resourceVersion: this.resourceVersion,
            timeoutSeconds: this.opts.timeoutSeconds,
          },
          onEvent,
          (err) => {
            if (err && !settled)
              this.opts.log.info({ err, kind: this.kind }, 'Kubernetes watch broke; resuming');
            finish('ended');
          },
        )
        .then((stop) => {
          if (settled || this.stopped) stop();
          else this.stopWatch = stop;
          if (this.stopped) finish('ended');
        })
        .catch((err) => {
          if (settled) return;
          clearTimeout(idle);
          settled = true;
          this.endWatch = null;
          reject(err);
        });
    });
  }

  private async relist(): Promise<void> {
    const listed = await (this.kind === 'jobs'
      ? this.client.listJobs(this.labelSelector)
      : this.client.listPods(this.labelSelector));
    const seen = new Set<string>();
    for (const object of listed.items as T[]) {
      const name = object.metadata!.name!;
      seen.add(name);
      const before = this.known.get(name);
      if (before && before.metadata?.uid !== object.metadata?.uid) this.handlers.removed(before);
      this.known.set(name, object);
      if (
        before?.metadata?.resourceVersion !== object.metadata?.resourceVersion ||
        before?.metadata?.uid !== object.metadata?.uid
      )
        this.handlers.changed(object);
    }
    for (const [name, object] of [...this.known])
      if (!seen.has(name)) {
        this.known.delete(name);
        this.handlers.removed(object);
      }
    this.resourceVersion = listed.resourceVersion;
  }

  private pause(failures: number): Promise<void> {
    const ms = backoffMs(failures);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }
}
