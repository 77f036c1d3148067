import type { JobObserver, JobSpec } from '../executors/executor.port';

/** How a followed job is submitted: the executor's `submit`, or its place in a SubmitGroup. */
export type SubmitFn = (spec: JobSpec, observer: JobObserver, retry?: boolean) => Promise<string>;

/**
 * The submissions of a batch's chunk, claimed together (JobRunner.dispatchChunk), made with one
 * `executor.submitMany` once each of its `expected` jobs has either asked to be submitted or
 * left (failed before its submission: `leave`). A job asking again (`retry`: the cluster could
 * not be reached) or after the group was sent is submitted on its own, as a single job is.
 */
export class SubmitGroup {
  private readonly specs: JobSpec[] = [];
  private readonly observers: JobObserver[] = [];
  private readonly answers: { resolve: (id: string) => void; reject: (err: unknown) => void }[] = [];
  private left = 0;
  private sent = false;

  constructor(
    /** The executor's `submit` and `submitMany`. */
    private readonly one: SubmitFn,
    private readonly many: (
      specs: readonly JobSpec[],
      observers: readonly JobObserver[],
    ) => Promise<string[]>,
    private readonly expected: number,
  ) {}

  readonly submit: SubmitFn = (spec, observer, retry) => {
    if (this.sent || retry) return this.one(spec, observer, retry);
    return new Promise<string>((resolve, reject) => {
      this.specs.push(spec);
      this.observers.push(observer);
      this.answers.push({ resolve, reject });
      this.sendWhenComplete();
    });
  };

  /** A job of the group that will not ask (it failed before its submission). */
  leave(): void {
    if (this.sent) return;
    this.left++;
    this.sendWhenComplete();
  }

  private sendWhenComplete(): void {
    if (this.sent || this.specs.length + this.left < this.expected) return;
    this.sent = true;
    if (!this.specs.length) return;
    this.many(this.specs, this.observers).then(
      (ids) => this.answers.forEach((a, i) => a.resolve(ids[i])),
      (err) => this.answers.forEach((a) => a.reject(err)),
    );
  }
}
