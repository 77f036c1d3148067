import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { gql, messageOf } from '../api/graphql';
import type { Scope } from '../api/session';
import {
  DeleteSecretDocument,
  SecretsDocument,
  SetSecretDocument,
  type SecretsQuery,
} from '../generated/graphql';
import { ErrorNote } from './common';

/**
 * An owner's secrets (docs/secrets.md): names and times, a form to set one, delete. Values are
 * write-only: the field is cleared once sent and no answer carries one. `scope`: the user (null)
 * or a team (its id: a token acting for the team, whose admins and owners may change them).
 */
export function SecretsPanel({
  scope,
  title,
  mayManage,
}: {
  scope: Scope;
  title: string;
  mayManage: boolean;
}) {
  const [secrets, setSecrets] = useState<SecretsQuery['secrets']>([]);
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [problems, setProblems] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const [saved, setSaved] = useState('');

  const load = useCallback(async () => {
    try {
      setSecrets((await gql(SecretsDocument, {}, { scope })).secrets);
    } catch (err) {
      setError(messageOf(err));
    }
  }, [scope]);
  useEffect(() => void load(), [load]);

  const save = async (e: FormEvent) => {
    e.preventDefault();
    setProblems({});
    setError('');
    try {
      const r = await gql(SetSecretDocument, { name, value }, { scope });
      setSaved(r.setSecret.name);
      setName('');
      setValue('');
      void load();
    } catch (err) {
      const details = (err as { details?: Record<string, string> }).details;
      if (details && Object.keys(details).length) setProblems(details);
      setError(messageOf(err));
    }
  };

  const remove = async (secret: string) => {
    try {
      await gql(DeleteSecretDocument, { name: secret }, { scope });
      void load();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  return (
    <section aria-labelledby={`secrets-${scope ?? 'me'}`}>
      <h2 id={`secrets-${scope ?? 'me'}`}>{title}</h2>
      <p className="muted">
        Models name the secrets their jobs need; a job gets its owner&apos;s. Values are never shown again.
      </p>
      {secrets.length ? (
        <table className="secrets">
          <thead>
            <tr>
              <th>Name</th>
              <th>Last set</th>
              {mayManage ? <th aria-label="Actions" /> : null}
            </tr>
          </thead>
          <tbody>
            {secrets.map((s) => (
              <tr key={s.name}>
                <td>
                  <code>{s.name}</code>
                </td>
                <td>{new Date(s.updatedAt).toLocaleString()}</td>
                {mayManage ? (
                  <td>
                    <button type="button" onClick={() => void remove(s.name)} aria-label={`Delete ${s.name}`}>
                      Delete
                    </button>
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="muted">No secrets yet.</p>
      )}
      {mayManage ? (
        <form className="inline-form" onSubmit={save} autoComplete="off">
          <label htmlFor={`secret-name-${scope ?? 'me'}`}>Secret name</label>
          <input
            id={`secret-name-${scope ?? 'me'}`}
            value={name}
            onChange={(e) => setName(e.target.value)}
            placeholder="HF_TOKEN"
            aria-invalid={problems.name ? true : undefined}
            required
          />
          <label htmlFor={`secret-value-${scope ?? 'me'}`}>Value</label>
          <input
            id={`secret-value-${scope ?? 'me'}`}
            type="password"
            value={value}
            onChange={(e) => setValue(e.target.value)}
            aria-invalid={problems.value ? true : undefined}
            required
          />
          <button type="submit">Set secret</button>
        </form>
      ) : null}
      {saved ? <p role="status">Secret {saved} saved.</p> : null}
      <ErrorNote>{error}</ErrorNote>
    </section>
  );
}
