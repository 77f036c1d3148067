import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { gql, messageOf } from '../api/graphql';
import { actingScope } from '../api/session';
import {
  ApiKeysDocument,
  CreateApiKeyDocument,
  CreateTeamDocument,
  RevokeApiKeyDocument,
  type ApiKeyRowFragment,
  type ViewerQuery,
} from '../generated/graphql';
import { Link } from '../router';
import { ErrorNote, when } from '../ui/common';
import { SecretsPanel } from '../ui/Secrets';
import { ActingAs } from '../ui/WhoAmI';

type Team = ViewerQuery['teams']['nodes'][number];

/**
 * Who the app acts as, teams, and API keys. Keys and teams are managed with the user's own token
 * (a team's token may not create keys); the keys shown are those of whom the app acts as.
 */
export function AccountPage({ viewer, onTeamsChanged }: { viewer: ViewerQuery; onTeamsChanged: () => void }) {
  const acting = actingScope();
  const teams = viewer.teams.nodes;
  const team = teams.find((t) => t.id === acting) ?? null;
  return (
    <section aria-labelledby="account-title">
      <h1 id="account-title">Account</h1>
      <p>
        Signed in as <strong>{viewer.me.username}</strong>
        {viewer.me.email ? ` (${viewer.me.email})` : ''}.
      </p>
      <ActingAs teams={teams} />
      <Teams teams={teams} onCreated={onTeamsChanged} />
      <ApiKeys team={team} />
      <SecretsPanel scope={null} title="Your secrets" mayManage />
    </section>
  );
}

function Teams({ teams, onCreated }: { teams: Team[]; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [error, setError] = useState('');
  const create = async (e: FormEvent) => {
    e.preventDefault();
    try {
      await gql(CreateTeamDocument, { name }, { scope: null });
      setName('');
      setError('');
      onCreated();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <>
      <h2>Teams</h2>
      {teams.length ? (
        <ul aria-label="Your teams">
          {teams.map((t) => (
            <li key={t.id}>
              <Link href={`/teams/${t.id}`}>{t.name}</Link>{' '}
              <span className="muted">({t.role.toLowerCase()})</span>
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted">You are in no team yet.</p>
      )}
      <form className="inline-form" onSubmit={create}>
        <label htmlFor="team-name">New team</label>
        <input id="team-name" value={name} onChange={(e) => setName(e.target.value)} required />
        <button type="submit">Create team</button>
      </form>
      <ErrorNote>{error}</ErrorNote>
    </>
  );
}

function ApiKeys({ team }: { team: Team | null }) {
  const [keys, setKeys] = useState<ApiKeyRowFragment[]>([]);
  const [name, setName] = useState('');
  const [role, setRole] = useState('member');
  const [created, setCreated] = useState<{ name: string; value: string } | null>(null);
  const [copied, setCopied] = useState(false);
  const [error, setError] = useState('');
  const teamId = team?.id ?? null;
  // A team's keys are managed by its admins and owners (docs/teams.md).
  const mayManage = !team || team.role === 'OWNER' || team.role === 'ADMIN';

  const load = useCallback(async () => {
    if (!mayManage) return setKeys([]);
    try {
      setKeys((await gql(ApiKeysDocument, { teamId }, { scope: null })).apiKeys.nodes);
    } catch (err) {
      setError(messageOf(err));
    }
  }, [teamId, mayManage]);

  useEffect(() => {
    setCreated(null);
    void load();
  }, [load]);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    try {
      const r = await gql(
        CreateApiKeyDocument,
        { input: { name, teamId, role: teamId ? role : null } },
        { scope: null },
      );
      setCreated({ name: r.createApiKey.apiKey.name, value: r.createApiKey.value });
      setCopied(false);
      setName('');
      setError('');
      void load();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  const revoke = async (id: string) => {
    try {
      await gql(RevokeApiKeyDocument, { id }, { scope: null });
      void load();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  const copy = async () => {
    if (!created) return;
    await navigator.clipboard.writeText(created.value);
    setCopied(true);
  };

  return (
    <>
      <h2>API keys {team ? `of team ${team.name}` : 'of yours'}</h2>
      {!mayManage ? (
        <p className="muted">Only the team's admins and owners manage its keys.</p>
      ) : (
        <>
          <form className="inline-form" onSubmit={create}>
            <label htmlFor="key-name">Key name</label>
            <input id="key-name" value={name} onChange={(e) => setName(e.target.value)} required />
            {teamId ? (
              <>
                <label htmlFor="key-role">Role</label>
                <select id="key-role" value={role} onChange={(e) => setRole(e.target.value)}>
                  <option value="member">member</option>
                  <option value="viewer">viewer</option>
                </select>
              </>
            ) : null}
            <button type="submit">Create key</button>
          </form>
          {created ? (
            <div className="secret" role="status">
              <p>
                The key <strong>{created.name}</strong>. Store it now: it is shown only once.
              </p>
              <code aria-label="New API key">{created.value}</code>{' '}
              <button type="button" onClick={() => void copy()}>
                {copied ? 'Copied' : 'Copy'}
              </button>
            </div>
          ) : null}
          <ErrorNote>{error}</ErrorNote>
          <div className="table-wrap">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  {teamId ? <th scope="col">Role</th> : null}
                  {teamId ? <th scope="col">Created by</th> : null}
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.map((k) => (
                  <tr key={k.id}>
                    <td>{k.name}</td>
                    {teamId ? <td>{k.role}</td> : null}
                    {teamId ? <td>{k.createdByUsername}</td> : null}
                    <td>{when(k.createdAt)}</td>
                    <td>{when(k.lastUsedAt)}</td>
                    <td>
                      {k.revokedAt ? (
                        <span className="muted">revoked</span>
                      ) : (
                        <button
                          type="button"
                          onClick={() => void revoke(k.id)}
                          aria-label={`Revoke ${k.name}`}
                        >
                          Revoke
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </>
  );
}
