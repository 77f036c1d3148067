import type { Logger } from '../common/logger';
import { backoffMs, KubernetesApiError, type KubernetesClient } from './kubernetes.client';
import { LineSplitter } from './local.executor';

/**
 * Follows one pod's container log (`pods/{name}/log?follow=true&timestamps=true`) line by line
 * until the container has stopped and every line was read. A stream that ends or breaks while
 * the container still runs is resumed from the last line's time; the lines of that second that
 * were already delivered are skipped, so none is lost or repeated.
 */
export class PodLogFollower {
  /** Settles once every line was delivered (or the pod is gone). */
  readonly done: Promise<void>;
  private stopped = false;
  private stopStream: (() => void) | null = null;
  /** The last delivered line's time (sortable form) and how many lines had exactly that time. */
  private lastKey = '';
  private lastStamp: string | null = null;
  private seenAtLast = 0;
  private readonly shownBeforeKey: string;

  constructor(
    private readonly client: KubernetesClient,
    readonly pod: string,
    /** `earlier`: printed before `shownBefore` (a job taken over: another worker showed it). */
    private readonly onLine: (line: string, earlier: boolean) => void,
    private readonly log: Logger,
    shownBefore: Date | null = null,
  ) {
    this.shownBeforeKey = shownBefore ? sortable(shownBefore.toISOString()) : '';
    this.done = this.run();
  }

  stop(): void {
    this.stopped = true;
    this.stopStream?.();
  }

  private async run(): Promise<void> {
    for (let failures = 0; !this.stopped;) {
      let clean = false;
      let delivered = false;
      // Lines of this stream at the last delivered time so far (to skip those delivered before).
      let atLast = 0;
      const splitter = new LineSplitter((raw) => {
        const taken = this.take(raw, atLast);
        atLast = taken.atLast;
        delivered ||= taken.delivered;
      });
      try {
        const stream = await this.client.followLog(this.pod, this.lastStamp, (text) => splitter.push(text));
        this.stopStream = stream.stop;
        clean = await stream.done.then(
          () => true,
          () => false,
        );
        splitter.end();
      } catch (err) {
        if (err instanceof KubernetesApiError && err.status === 404) return; // the pod is gone
        if (!this.stopped)
          this.log.info({ err, pod: this.pod }, 'cannot follow the log of a pod; trying again');
      } finally {
        this.stopStream = null;
      }
      if (this.stopped) return;
      // The stream ended: that is the end of the log only if the container has stopped.
      const pod = await this.client.getPod(this.pod).catch(() => undefined);
      if (pod === null) return;
      if (clean && pod?.status?.containerStatuses?.[0]?.state?.terminated) return;
      if (delivered) failures = 0;
      await sleep(backoffMs(failures++));
    }
  }

  /** Delivers one timestamped line unless an earlier stream delivered it. */
  private take(raw: string, atLast: number): { atLast: number; delivered: boolean } {
    const space = raw.indexOf(' ');
    const key = space > 0 ? sortable(raw.slice(0, space)) : '';
    if (!key) {
      this.onLine(raw, false);
      return { atLast, delivered: true };
    }
    if (key < this.lastKey) return { atLast, delivered: false };
    if (key === this.lastKey) {
      if (atLast < this.seenAtLast) return { atLast: atLast + 1, delivered: false };
      this.seenAtLast++;
    } else {
      this.lastKey = key;
      this.lastStamp = raw.slice(0, space);
      this.seenAtLast = 1;
      atLast = 0;
    }
    this.onLine(raw.slice(space + 1), key < this.shownBeforeKey);
    return { atLast: atLast + 1, delivered: true };
  }
}

/** RFC 3339 with up to nine fraction digits (Kubernetes drops trailing zeros) in sortable form. */
function sortable(stamp: string): string {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$/.exec(stamp);
  return m ? `${m[1]}.${(m[2] ?? '').padEnd(9, '0')}` : '';
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
