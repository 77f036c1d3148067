import { useCallback, useEffect, useState } from 'react';
import { gql, messageOf } from '../api/graphql';
import {
  ModelProductDocument,
  SetModelVisibilityDocument,
  type ModelProductQuery,
  type ModelVersionRowFragment,
} from '../generated/graphql';
import { ErrorNote } from '../ui/common';

type Product = ModelProductQuery['model'];

/** What runs in a version, field by field, as a person reads it. */
function fieldsOf(v: ModelVersionRowFragment): Record<string, string> {
  return {
    container: v.container,
    command: v.command,
    'machine type': v.machineType,
    'machine count': String(v.machineCount),
    timeout: `${v.timeoutSeconds} s`,
    secrets: v.secrets.join(', ') || 'none',
    ...Object.fromEntries(
      v.args.map((a) => [
        `argument ${a.name}`,
        [
          a.type,
          a.format,
          a.optional ? 'optional' : '',
          a.min !== null ? `min ${a.min}` : '',
          a.max !== null ? `max ${a.max}` : '',
          a.choices ? `one of ${a.choices.join(', ')}` : '',
        ]
          .filter(Boolean)
          .join(' · '),
      ]),
    ),
  };
}

/** The fields that differ between two versions: [field, in a, in b] (absent: "—"). */
export function versionDiff(
  a: ModelVersionRowFragment,
  b: ModelVersionRowFragment,
): [string, string, string][] {
  const fa = fieldsOf(a);
  const fb = fieldsOf(b);
  const keys = [...new Set([...Object.keys(fa), ...Object.keys(fb)])];
  return keys.filter((k) => fa[k] !== fb[k]).map((k) => [k, fa[k] ?? '—', fb[k] ?? '—']);
}

const label = (v: ModelVersionRowFragment) => `#${v.sequence} · ${new Date(v.createdAt).toLocaleString()}`;

/**
 * A model as a product (docs/models.md): its visibility (its owner switches it), the teams it is
 * shared with, the secrets its jobs need, its versions with what changed between two, and which
 * version a run pins (`onPin`: null for the latest).
 */
export function ModelProduct({
  id,
  pinned,
  onPin,
}: {
  id: string;
  pinned: string | null;
  onPin: (versionId: string | null) => void;
}) {
  const [model, setModel] = useState<Product | null>(null);
  const [error, setError] = useState('');
  const [compare, setCompare] = useState<[string, string] | null>(null);

  const load = useCallback(async () => {
    try {
      const { model: m } = await gql(ModelProductDocument, { id });
      setModel(m);
      const [newest, previous] = m.versions.nodes;
      if (newest && previous) setCompare((c) => c ?? [previous.id, newest.id]);
    } catch (err) {
      setError(messageOf(err));
    }
  }, [id]);
  useEffect(() => void load(), [load]);

  if (!model) return <ErrorNote>{error}</ErrorNote>;
  const versions = model.versions.nodes;
  const byId = (vid: string) => versions.find((v) => v.id === vid);
  const a = compare && byId(compare[0]);
  const b = compare && byId(compare[1]);
  const isPrivate = model.visibility === 'private';

  const toggle = async () => {
    try {
      await gql(SetModelVisibilityDocument, { id, visibility: isPrivate ? 'public' : 'private' });
      setError('');
      void load();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  return (
    <section aria-labelledby="product-title" className="model-product">
      <h2 id="product-title">About this model</h2>
      <dl>
        <dt>Visibility</dt>
        <dd>
          <span data-testid="visibility">{isPrivate ? 'Private' : 'Public'}</span>{' '}
          <span className="muted">
            {isPrivate
              ? '(only its owner and the teams it is shared with see it)'
              : '(everyone sees and runs it)'}
          </span>
          {model.viewerCanEdit ? (
            <>
              {' '}
              <button type="button" onClick={() => void toggle()}>
                {isPrivate ? 'Make public' : 'Make private'}
              </button>
            </>
          ) : null}
        </dd>
        {model.sharedWith ? (
          <>
            <dt>Shared with</dt>
            <dd>
              {model.sharedWith.length ? model.sharedWith.map((t) => <code key={t}>{t} </code>) : 'no team'}
            </dd>
          </>
        ) : null}
        <dt>Secrets it needs</dt>
        <dd data-testid="model-secrets">
          {model.secrets.length ? model.secrets.map((s) => <code key={s}>{s} </code>) : 'none'}
          {model.secrets.length ? (
            <span className="muted"> (set them on your Account or Team page)</span>
          ) : null}
        </dd>
      </dl>

      <label htmlFor="version-pin">Version to run</label>
      <select id="version-pin" value={pinned ?? ''} onChange={(e) => onPin(e.target.value || null)}>
        <option value="">Latest{versions[0] ? ` (#${versions[0].sequence})` : ''}</option>
        {versions.map((v) => (
          <option key={v.id} value={v.id}>
            {label(v)}
          </option>
        ))}
      </select>

      {versions.length > 1 && a && b ? (
        <div className="version-diff">
          <h3>What changed between two versions</h3>
          <label htmlFor="diff-a">From</label>
          <select id="diff-a" value={a.id} onChange={(e) => setCompare([e.target.value, b.id])}>
            {versions.map((v) => (
              <option key={v.id} value={v.id}>
                {label(v)}
              </option>
            ))}
          </select>
          <label htmlFor="diff-b">to</label>
          <select id="diff-b" value={b.id} onChange={(e) => setCompare([a.id, e.target.value])}>
            {versions.map((v) => (
              <option key={v.id} value={v.id}>
                {label(v)}
              </option>
            ))}
          </select>
          <table aria-label="Changes between the versions">
            <thead>
              <tr>
                <th>Field</th>
                <th>#{a.sequence}</th>
                <th>#{b.sequence}</th>
              </tr>
            </thead>
            <tbody>
              {versionDiff(a, b).map(([field, before, after]) => (
                <tr key={field}>
                  <th scope="row">{field}</th>
                  <td>
                    <code>{before}</code>
                  </td>
                  <td>
                    <code>{after}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {a.id !== b.id && !versionDiff(a, b).length ? (
            <p className="muted">Nothing that runs differs.</p>
          ) : null}
        </div>
      ) : null}
      <ErrorNote>{error}</ErrorNote>
    </section>
  );
}
