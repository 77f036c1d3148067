import { useEffect, useState, type FormEvent } from 'react';
import { ApiError, gql, messageOf } from '../api/graphql';
import { upload } from '../api/upload';
import {
  MediaListDocument,
  ModelRunFormDocument,
  RunDeploymentDocument,
  type MediaItemFragment,
  type ModelRunFormQuery,
} from '../generated/graphql';
import { Link, navigate } from '../router';
import { ErrorNote, Loading } from '../ui/common';
import { ModelProduct } from './ModelProduct';

type Arg = ModelRunFormQuery['model']['args'][number];

/** What was typed, as the API takes it: numbers as numbers, lists as lists, blanks left out. */
function valueOf(arg: Arg, raw: string): unknown {
  const text = raw.trim();
  if (text === '') return undefined;
  if (arg.type === 'int' || arg.type === 'float') {
    const n = Number(text);
    return Number.isFinite(n) ? n : text; // the server explains what is wrong
  }
  if (arg.type === 'array') return text.split(',').map((s) => s.trim());
  return raw;
}

/**
 * The run form of a model, generated from its `args`: an input per type, bounds shown, optional
 * ones marked, files picked from the user's media or uploaded here. The server checks everything;
 * its VALIDATION_FAILED details are shown beside the fields they name.
 */
export function RunModelPage({ id }: { id: string }) {
  const [model, setModel] = useState<ModelRunFormQuery['model'] | null>(null);
  const [media, setMedia] = useState<MediaItemFragment[]>([]);
  const [values, setValues] = useState<Record<string, string>>({});
  const [name, setName] = useState('');
  const [problems, setProblems] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  // The version a run pins; null runs the latest.
  const [versionId, setVersionId] = useState<string | null>(null);

  useEffect(() => {
    (async () => {
      try {
        const [{ model: m }, { media: list }] = await Promise.all([
          gql(ModelRunFormDocument, { id }),
          gql(MediaListDocument, { first: 200 }),
        ]);
        setModel(m);
        setMedia(list.nodes);
        setName(m.name);
      } catch (err) {
        setError(messageOf(err));
      }
    })();
  }, [id]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!model) return;
    setBusy(true);
    setProblems({});
    setError('');
    try {
      const args: Record<string, unknown> = {};
      for (const arg of model.args) {
        const v = valueOf(arg, values[arg.name] ?? '');
        if (v !== undefined) args[arg.name] = v;
      }
      const { createDeployment } = await gql(RunDeploymentDocument, {
        input: { name, modelId: model.id, versionId, args },
      });
      navigate(`/jobs/${createDeployment.job.id}`);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'VALIDATION_FAILED' && Object.keys(err.details).length) {
        setProblems(err.details);
        setError('Some values need another look.');
      } else setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  if (!model) return error ? <ErrorNote>{error}</ErrorNote> : <Loading what="the model" />;
  const set = (argName: string, v: string) => setValues((old) => ({ ...old, [argName]: v }));

  return (
    <section aria-labelledby="run-title">
      <p>
        <Link href="/models">← Models</Link>
      </p>
      <h1 id="run-title">Run {model.name}</h1>
      {model.description ? <p>{model.description}</p> : null}
      <ModelProduct id={model.id} pinned={versionId} onPin={setVersionId} />
      <form className="run-form" onSubmit={submit} noValidate>
        <Field id="deployment-name" label="Run name" problem={problems.name}>
          <input id="deployment-name" value={name} onChange={(e) => setName(e.target.value)} required />
        </Field>
        {model.args.map((arg) => (
          <ArgField
            key={arg.name}
            arg={arg}
            value={values[arg.name] ?? ''}
            onChange={(v) => set(arg.name, v)}
            problem={problems[`args.${arg.name}`]}
            media={media}
            onUploaded={(m) => setMedia((old) => [m, ...old])}
          />
        ))}
        {problems.args ? <p className="field-problem">{problems.args}</p> : null}
        {problems.versionId ? <p className="field-problem">Version: {problems.versionId}</p> : null}
        {problems.secrets ? <p className="field-problem">Secrets: {problems.secrets}</p> : null}
        <ErrorNote>{error}</ErrorNote>
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Starting…' : 'Run'}
        </button>
      </form>
    </section>
  );
}

/** A field's label: the argument's description (a sentence, without its full stop), else its name. */
export function labelOf(arg: { name: string; description?: string | null }): string {
  const d = arg.description?.trim().replace(/\.$/, '');
  return d || arg.name;
}

function Field({
  id,
  label,
  hint,
  problem,
  children,
}: {
  id: string;
  label: string;
  hint?: string;
  problem?: string;
  children: React.ReactNode;
}) {
  return (
    <div className={`field${problem ? ' invalid' : ''}`}>
      <label htmlFor={id}>{label}</label>
      {children}
      {hint ? (
        <small id={`${id}-hint`} className="muted">
          {hint}
        </small>
      ) : null}
      {problem ? (
        <small id={`${id}-problem`} className="field-problem" role="alert">
          {problem}
        </small>
      ) : null}
    </div>
  );
}

function ArgField({
  arg,
  value,
  onChange,
  problem,
  media,
  onUploaded,
}: {
  arg: Arg;
  value: string;
  onChange: (v: string) => void;
  problem?: string;
  media: MediaItemFragment[];
  onUploaded: (m: MediaItemFragment) => void;
}) {
  const id = `arg-${arg.name}`;
  const label = `${labelOf(arg)}${arg.optional ? ' (optional)' : ''}`;
  const bounds = [arg.min !== null ? `at least ${arg.min}` : '', arg.max !== null ? `at most ${arg.max}` : '']
    .filter(Boolean)
    .join(', ');
  // The argument's own name last: what an API client sends.
  const hint = [bounds, arg.example && !arg.choices ? `e.g. ${arg.example}` : '', `argument ${arg.name}`]
    .filter(Boolean)
    .join(' · ');
  const described =
    [hint ? `${id}-hint` : '', problem ? `${id}-problem` : ''].filter(Boolean).join(' ') || undefined;
  const common = {
    id,
    name: arg.name,
    'aria-invalid': problem ? true : undefined,
    'aria-describedby': described,
    required: !arg.optional,
  };
  if (arg.type === 'file')
    return (
      <Field id={id} label={label} hint={hint} problem={problem}>
        <FilePicker common={common} value={value} onChange={onChange} media={media} onUploaded={onUploaded} />
      </Field>
    );
  if (arg.choices)
    return (
      <Field id={id} label={label} hint={hint} problem={problem}>
        <select {...common} value={value} onChange={(e) => onChange(e.target.value)}>
          {arg.optional || !value ? (
            <option value="">
              {arg.optional ? `Default${arg.example ? ` (${arg.example})` : ''}` : 'Choose…'}
            </option>
          ) : null}
          {arg.choices.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
      </Field>
    );
  return (
    <Field
      id={id}
      label={label}
      hint={arg.type === 'array' ? `comma-separated · ${hint}` : hint}
      problem={problem}
    >
      <input
        {...common}
        type={arg.type === 'int' || arg.type === 'float' ? 'number' : 'text'}
        step={arg.type === 'int' ? 1 : arg.type === 'float' ? 'any' : undefined}
        min={arg.min ?? undefined}
        max={arg.max ?? undefined}
        inputMode={arg.type === 'int' ? 'numeric' : arg.type === 'float' ? 'decimal' : undefined}
        value={value}
        placeholder={arg.example ?? undefined}
        onChange={(e) => onChange(e.target.value)}
      />
    </Field>
  );
}

function FilePicker({
  common,
  value,
  onChange,
  media,
  onUploaded,
}: {
  common: {
    id: string;
    name: string;
    required: boolean;
    'aria-describedby'?: string;
    'aria-invalid'?: boolean;
  };
  value: string;
  onChange: (v: string) => void;
  media: MediaItemFragment[];
  onUploaded: (m: MediaItemFragment) => void;
}) {
  const [progress, setProgress] = useState<number | null>(null);
  const [error, setError] = useState('');
  const pick = async (file: File | undefined) => {
    if (!file) return;
    setError('');
    setProgress(0);
    try {
      const mediaId = await upload(file, [], (sent, total) => setProgress(total ? sent / total : 0)).done;
      const uploaded: MediaItemFragment = {
        id: mediaId,
        url: '',
        imageName: file.name,
        contentType: file.type,
        size: file.size,
        tags: [],
        type: 'SOURCE_ASSET',
        createdAt: new Date().toISOString(),
      };
      onUploaded(uploaded);
      onChange(mediaId);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setProgress(null);
    }
  };
  return (
    <div className="file-picker">
      <select {...common} value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">Choose one of your files…</option>
        {media.map((m) => (
          <option key={m.id} value={m.id}>
            {m.imageName || m.id}
          </option>
        ))}
      </select>
      <label className="button">
        Upload a file
        <input
          type="file"
          className="visually-hidden"
          aria-label={`Upload a file for ${common.name}`}
          onChange={(e) => void pick(e.target.files?.[0])}
        />
      </label>
      {progress !== null ? <progress value={progress} max={1} aria-label="Upload progress" /> : null}
      <ErrorNote>{error}</ErrorNote>
    </div>
  );
}
