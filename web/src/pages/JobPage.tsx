import { costText } from './Jobs';
import { useCallback, useEffect, useRef, useState } from 'react';
import { gql, messageOf } from '../api/graphql';
import { onReconnect, subscribe } from '../api/live';
import {
  CancelJobDocument,
  JobLogsDocument,
  JobPageDocument,
  JobWatchDocument,
  MediaNameDocument,
  RunDeploymentDocument,
  type JobDetailFragment,
  type JobPageQuery,
} from '../generated/graphql';
import { Link, navigate } from '../router';
import { labelOf } from './RunModel';
import { bytes, ErrorNote, isTerminal, Loading, seconds, StatusBadge, statusWord, when } from '../ui/common';

/** Text and JSON results are shown inline up to this size; larger ones are downloaded. */
const INLINE_LIMIT = 256 * 1024;

/** One job: its state history and times, its log as it is printed, its result; cancel, run again. */
export function JobPage({ id }: { id: string }) {
  const [job, setJob] = useState<JobDetailFragment | null>(null);
  // The model's argument definitions (read once; live updates do not carry them).
  const [argDefs, setArgDefs] = useState<ArgDef[]>([]);
  const [log, setLog] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const logRef = useRef<HTMLPreElement>(null);

  const read = useCallback(async () => {
    try {
      const { job: j } = await gql(JobPageDocument, { id });
      setJob(j);
      setArgDefs(j.model?.args ?? []);
      setLog(j.logTail);
      setError('');
    } catch (err) {
      setError(messageOf(err));
    }
  }, [id]);

  useEffect(() => {
    setJob(null);
    setLog('');
    // Subscribe first, then read: nothing printed in between is missed (a line may show twice).
    const stopWatch = subscribe(JobWatchDocument, { id }, ({ jobUpdated }) => setJob(jobUpdated), setError);
    const stopLogs = subscribe(JobLogsDocument, { id }, ({ jobLogs }) =>
      setLog((l) => `${l}${jobLogs.line}\n`),
    );
    const stopReconnect = onReconnect(() => void read());
    void read();
    return () => {
      stopWatch();
      stopLogs();
      stopReconnect();
    };
  }, [id, read]);

  useEffect(() => {
    const el = logRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [log]);

  const cancel = async () => {
    setBusy(true);
    try {
      const { cancelJob } = await gql(CancelJobDocument, { id });
      setJob((j) => (j ? { ...j, status: cancelJob.status } : j));
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  const runAgain = async () => {
    if (!job) return;
    setBusy(true);
    try {
      const { createDeployment } = await gql(RunDeploymentDocument, {
        input: { name: job.deployment.name, modelId: job.deployment.modelId, args: job.deployment.args },
      });
      navigate(`/jobs/${createDeployment.job.id}`);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  if (!job)
    return (
      <section>
        <p>
          <Link href="/">← Jobs</Link>
        </p>
        {error ? <ErrorNote>{error}</ErrorNote> : <Loading what="the job" />}
      </section>
    );

  const waitText = waiting(job);
  return (
    <section aria-labelledby="job-title">
      <p>
        <Link href="/">← Jobs</Link>
      </p>
      <div className="page-head">
        <h1 id="job-title">{job.deployment.name}</h1>
        <StatusBadge status={job.status} />
      </div>
      <p className="muted">
        {job.model ? (
          job.model.name === job.deployment.name ? (
            <Link href={`/models/${job.model.id}`}>the model's page</Link>
          ) : (
            <>
              model <Link href={`/models/${job.model.id}`}>{job.model.name}</Link>
            </>
          )
        ) : (
          'deleted model'
        )}{' '}
        · job {job.id}
      </p>
      <ErrorNote>{error}</ErrorNote>
      <div className="actions">
        {!isTerminal(job.status) ? (
          <button type="button" onClick={cancel} disabled={busy}>
            Cancel job
          </button>
        ) : null}
        <button type="button" onClick={runAgain} disabled={busy || !job.model}>
          Run again
        </button>
      </div>

      <div className="columns">
        <div>
          <h2>History</h2>
          <ol className="history" aria-label="State history">
            {job.transitions.map((t) => (
              <li key={`${t.to}-${t.at}`}>
                <StatusBadge status={t.to} /> <time dateTime={t.at}>{when(t.at)}</time>
              </li>
            ))}
          </ol>
          <dl className="facts">
            <dt>Created</dt>
            <dd>{when(job.createdAt)}</dd>
            <dt>Started</dt>
            <dd>{when(job.startedAt)}</dd>
            <dt>Finished</dt>
            <dd>{when(job.finishedAt)}</dd>
            <dt>Queued for</dt>
            <dd>{seconds(job.queueSeconds)}</dd>
            <dt>Ran for</dt>
            <dd>{seconds(job.runSeconds)}</dd>
            <dt>Cost</dt>
            <dd data-testid="job-cost">{costText(job.cost)}</dd>
            <dt>Priority</dt>
            <dd data-testid="job-priority">{job.priority.toLowerCase()}</dd>
            <dt>Machines</dt>
            <dd>
              {job.machineCount} × {job.machineType}
            </dd>
            {waitText ? (
              <>
                <dt>Waiting</dt>
                <dd data-testid="job-waiting">{waitText}</dd>
              </>
            ) : null}
            {job.exitCode !== null ? (
              <>
                <dt>Exit code</dt>
                <dd>{job.exitCode}</dd>
              </>
            ) : null}
          </dl>
          <h2>Arguments</h2>
          <Arguments args={job.deployment.args as Record<string, unknown>} defs={argDefs} />
        </div>
        <div>
          <h2>Result</h2>
          {job.error ? <p className="error">{job.error}</p> : null}
          {job.status === 'SUCCEEDED' ? (
            <Result job={job} />
          ) : (
            <p className="muted">
              {isTerminal(job.status) ? 'No result.' : `The job is ${statusWord(job.status)}.`}
            </p>
          )}
          <h2>Log</h2>
          <pre className="log" ref={logRef} tabIndex={0} aria-label="Job log" aria-live="polite">
            {log || '(nothing printed yet)'}
          </pre>
        </div>
      </div>
    </section>
  );
}

type ArgDef = NonNullable<JobPageQuery['job']['model']>['args'][number];

/**
 * Why a job that has not started waits, as a person reads it: its place in its owner's queue
 * (1: next), and the quota that holds it or the cluster's reason (docs/governance.md).
 */
function waiting(job: JobDetailFragment): string {
  if (job.status !== 'QUEUED' && job.status !== 'STARTING') return '';
  const place =
    job.status !== 'QUEUED' || job.queuePosition === null
      ? ''
      : job.queuePosition === 1
        ? 'next of your jobs to start'
        : `${job.queuePosition - 1} of your jobs start before it`;
  return [place, job.pendingReason].filter(Boolean).join('; ');
}

/** A value as a person reads it: lists joined, objects as compact JSON. */
const readable = (v: unknown) =>
  Array.isArray(v) ? v.join(', ') : typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);

/** The arguments the job ran with: labelled as the run form labels them, files by name. */
function Arguments({ args, defs }: { args: Record<string, unknown>; defs: ArgDef[] }) {
  const names = Object.keys(args ?? {});
  if (!names.length) return <p className="muted">None.</p>;
  return (
    <dl className="facts values" aria-label="Arguments">
      {names.map((name) => {
        const def = defs.find((d) => d.name === name);
        return (
          <div key={name} className="fact">
            <dt>{def ? labelOf(def) : name}</dt>
            <dd>{def?.type === 'file' ? <MediaName id={String(args[name])} /> : readable(args[name])}</dd>
          </div>
        );
      })}
    </dl>
  );
}

/** A media asset by its file name, linked to the file; the id when it is gone. */
function MediaName({ id }: { id: string }) {
  const [media, setMedia] = useState<{ imageName: string; url: string } | null | undefined>(undefined);
  useEffect(() => {
    gql(MediaNameDocument, { id }).then(
      (r) => setMedia(r.mediaAsset),
      () => setMedia(null),
    );
  }, [id]);
  if (media === undefined) return <span className="muted">…</span>;
  if (media === null) return <span className="muted">{id} (deleted)</span>;
  return (
    <a href={media.url} target="_blank" rel="noreferrer">
      {media.imageName || id}
    </a>
  );
}

/** A result object of plain values as a list; anything else as JSON. */
function ResultValue({ value }: { value: unknown }) {
  const plain =
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((v) => v === null || typeof v !== 'object' || Array.isArray(v));
  if (!plain)
    return (
      <pre className="json" aria-label="Result JSON">
        {JSON.stringify(value, null, 2)}
      </pre>
    );
  return (
    <dl className="facts values" aria-label="Result values">
      {Object.entries(value).map(([k, v]) => (
        <div key={k} className="fact">
          <dt>{k.replace(/[_-]/g, ' ')}</dt>
          <dd>{readable(v)}</dd>
        </div>
      ))}
    </dl>
  );
}

function Result({ job }: { job: JobDetailFragment }) {
  return (
    <div className="result">
      {job.result !== null && job.result !== undefined ? <ResultValue value={job.result} /> : null}
      {job.outputs.map((o) => (
        <figure key={o.id} className="output">
          {o.contentType.startsWith('image/') ? (
            <img src={o.url} alt={`Result ${o.imageName}`} />
          ) : /^(text\/|application\/json)/.test(o.contentType) && o.size <= INLINE_LIMIT ? (
            <TextFile url={o.url} />
          ) : null}
          <figcaption>
            <a href={o.url} download={o.imageName}>
              Download {o.imageName}
            </a>{' '}
            <span className="muted">
              {o.contentType}, {bytes(o.size)}
            </span>
          </figcaption>
        </figure>
      ))}
      {job.outputs.length === 0 && (job.result === null || job.result === undefined) ? (
        <p className="muted">The job wrote no files.</p>
      ) : null}
    </div>
  );
}

function TextFile({ url }: { url: string }) {
  const [text, setText] = useState<string | null>(null);
  useEffect(() => {
    const ctl = new AbortController();
    fetch(url, { signal: ctl.signal })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(String(r.status)))))
      .then((t) => {
        try {
          setText(JSON.stringify(JSON.parse(t), null, 2));
        } catch {
          setText(t);
        }
      })
      .catch(() => setText(null));
    return () => ctl.abort();
  }, [url]);
  return text === null ? null : <pre className="json">{text}</pre>;
}
