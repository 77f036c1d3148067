import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { gql, messageOf } from '../api/graphql';
import { actingScope, setActingScope } from '../api/session';
import {
  ChangeMemberRoleDocument,
  InviteMemberDocument,
  LeaveTeamDocument,
  RemoveMemberDocument,
  RevokeTeamInviteDocument,
  TeamAuditDocument,
  TeamInvitesDocument,
  TeamPageDocument,
  type InviteRowFragment,
  type TeamAuditQuery,
  type TeamPageQuery,
  type TeamRole,
} from '../generated/graphql';
import { navigate } from '../router';
import { ErrorNote, Loading, when } from '../ui/common';
import { SecretsPanel } from '../ui/Secrets';

/** Team management acts as the signed-in person (their role in the team applies), not as the team. */
const AS_USER = { scope: null };
const ROLES: TeamRole[] = ['VIEWER', 'MEMBER', 'ADMIN', 'OWNER'];
const word = (r: TeamRole) => r.toLowerCase();

type Team = NonNullable<TeamPageQuery['team']>;

/** A team's members and roles, invitations and audit log (docs/teams.md). */
export function TeamPage({ id }: { id: string }) {
  const [data, setData] = useState<TeamPageQuery | null>(null);
  const [error, setError] = useState('');
  // Counts the changes made here, so the audit log shows their records.
  const [changes, setChanges] = useState(0);
  const changed = useCallback(() => setChanges((c) => c + 1), []);
  const load = useCallback(async () => {
    try {
      setData(await gql(TeamPageDocument, { id }, AS_USER));
      setError('');
      changed();
    } catch (err) {
      setError(messageOf(err));
    }
  }, [id, changed]);
  useEffect(() => void load(), [load]);

  if (!data) return error ? <ErrorNote>{error}</ErrorNote> : <Loading what="the team" />;
  const team = data.team;
  const manages = team.role === 'ADMIN' || team.role === 'OWNER';
  return (
    <section>
      <h1>Team {team.name}</h1>
      <p className="muted">
        Your role: <strong>{word(team.role)}</strong> · {team.memberCount} members
      </p>
      <ErrorNote>{error}</ErrorNote>
      <Members team={team} me={data.me.id} onChanged={load} onError={setError} />
      {manages ? <Invites team={team} onChanged={changed} /> : null}
      {/* Acting for the team: every member reads the names, its admins and owners set them. */}
      <SecretsPanel scope={team.id} title="Team secrets" mayManage={manages} />
      {manages ? <AuditLog team={team} changes={changes} /> : null}
    </section>
  );
}

function Members({
  team,
  me,
  onChanged,
  onError,
}: {
  team: Team;
  me: string;
  onChanged: () => Promise<void>;
  onError: (m: string) => void;
}) {
  const mayChange = (role: TeamRole) => team.role === 'OWNER' || (team.role === 'ADMIN' && role !== 'OWNER');
  const run = async (f: () => Promise<unknown>) => {
    try {
      await f();
      await onChanged();
    } catch (err) {
      onError(messageOf(err));
    }
  };
  const leave = () =>
    run(async () => {
      await gql(LeaveTeamDocument, { teamId: team.id }, AS_USER);
      if (actingScope() === team.id) setActingScope(null);
      navigate('/account');
    });
  return (
    <>
      <h2>Members</h2>
      <div className="table-wrap">
        <table className="table" aria-label="Members">
          <thead>
            <tr>
              <th scope="col">Person</th>
              <th scope="col">Role</th>
              <th scope="col">Joined</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {team.members.nodes.map((m) => (
              <tr key={m.userId}>
                <td>
                  {m.name ?? m.username} <span className="muted">{m.email ?? m.username}</span>
                </td>
                <td>
                  {m.userId !== me && mayChange(m.role) ? (
                    <select
                      aria-label={`Role of ${m.username}`}
                      value={m.role}
                      onChange={(e) =>
                        void run(() =>
                          gql(
                            ChangeMemberRoleDocument,
                            { teamId: team.id, userId: m.userId, role: e.target.value as TeamRole },
                            AS_USER,
                          ),
                        )
                      }
                    >
                      {ROLES.filter((r) => r !== 'OWNER' || team.role === 'OWNER').map((r) => (
                        <option key={r} value={r}>
                          {word(r)}
                        </option>
                      ))}
                    </select>
                  ) : (
                    word(m.role)
                  )}
                </td>
                <td>{when(m.joinedAt)}</td>
                <td>
                  {m.userId === me ? (
                    <button type="button" onClick={() => void leave()}>
                      Leave team
                    </button>
                  ) : mayChange(m.role) ? (
                    <button
                      type="button"
                      aria-label={`Remove ${m.username}`}
                      onClick={() =>
                        void run(() =>
                          gql(RemoveMemberDocument, { teamId: team.id, userId: m.userId }, AS_USER),
                        )
                      }
                    >
                      Remove
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function Invites({ team, onChanged }: { team: Team; onChanged: () => void }) {
  const [invites, setInvites] = useState<InviteRowFragment[]>([]);
  const [who, setWho] = useState('');
  const [role, setRole] = useState<TeamRole>('MEMBER');
  const [link, setLink] = useState('');
  const [error, setError] = useState('');
  const load = useCallback(async () => {
    try {
      setInvites((await gql(TeamInvitesDocument, { id: team.id }, AS_USER)).team.invites.nodes);
    } catch (err) {
      setError(messageOf(err));
    }
  }, [team.id]);
  useEffect(() => void load(), [load]);

  const invite = async (e: FormEvent) => {
    e.preventDefault();
    const address = who.trim();
    const input = address.includes('@') ? { email: address, role } : { username: address, role };
    try {
      const r = await gql(InviteMemberDocument, { teamId: team.id, input }, AS_USER);
      setLink(r.inviteToTeam.inviteUrl);
      setWho('');
      setError('');
      onChanged();
      void load();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const revoke = async (inviteId: string) => {
    try {
      await gql(RevokeTeamInviteDocument, { teamId: team.id, inviteId }, AS_USER);
      onChanged();
      void load();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <>
      <h2>Invite someone</h2>
      <form className="inline-form" onSubmit={invite}>
        <label htmlFor="invitee">Email or username</label>
        <input id="invitee" value={who} onChange={(e) => setWho(e.target.value)} required />
        <label htmlFor="invite-role">Role</label>
        <select id="invite-role" value={role} onChange={(e) => setRole(e.target.value as TeamRole)}>
          {ROLES.filter((r) => r !== 'OWNER' || team.role === 'OWNER').map((r) => (
            <option key={r} value={r}>
              {word(r)}
            </option>
          ))}
        </select>
        <button type="submit">Invite</button>
      </form>
      {link ? (
        <div className="secret" role="status">
          <p>Pass this link on (it is shown only now):</p>
          <code aria-label="Invitation link">{link}</code>{' '}
          <button type="button" onClick={() => void navigator.clipboard?.writeText(link)}>
            Copy
          </button>
        </div>
      ) : null}
      <ErrorNote>{error}</ErrorNote>
      <h2>Pending invitations</h2>
      {invites.length ? (
        <ul aria-label="Pending invitations">
          {invites.map((i) => (
            <li key={i.id}>
              {i.email ?? i.username} as {word(i.role)}, until {when(i.expiresAt)}
              {i.mailState !== 'none' ? <span className="muted"> (mail {i.mailState})</span> : null}{' '}
              <button
                type="button"
                aria-label={`Revoke the invitation of ${i.email ?? i.username}`}
                onClick={() => void revoke(i.id)}
              >
                Revoke
              </button>
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted">No pending invitations.</p>
      )}
    </>
  );
}

type AuditRow = TeamAuditQuery['team']['auditLog']['nodes'][number];

function AuditLog({ team, changes }: { team: Team; changes: number }) {
  const [rows, setRows] = useState<AuditRow[]>([]);
  const [action, setAction] = useState('');
  const [actorId, setActorId] = useState('');
  const [error, setError] = useState('');
  const load = useCallback(async () => {
    try {
      const r = await gql(
        TeamAuditDocument,
        { id: team.id, action: action || null, actorId: actorId || null },
        AS_USER,
      );
      setRows(r.team.auditLog.nodes);
      setError('');
    } catch (err) {
      setError(messageOf(err));
    }
  }, [team.id, action, actorId]);
  useEffect(() => void load(), [load, changes]);
  const nameOf = (userId: string | null | undefined) =>
    team.members.nodes.find((m) => m.userId === userId)?.username ?? userId ?? '—';
  return (
    <>
      <h2>Audit log</h2>
      <div className="inline-form">
        <label htmlFor="audit-action">Action</label>
        <input
          id="audit-action"
          value={action}
          placeholder="member.role_changed"
          onChange={(e) => setAction(e.target.value.trim())}
        />
        <label htmlFor="audit-actor">Person</label>
        <select id="audit-actor" value={actorId} onChange={(e) => setActorId(e.target.value)}>
          <option value="">anyone</option>
          {team.members.nodes.map((m) => (
            <option key={m.userId} value={m.userId}>
              {m.username}
            </option>
          ))}
        </select>
      </div>
      <ErrorNote>{error}</ErrorNote>
      <div className="table-wrap">
        <table className="table" aria-label="Audit log">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">Action</th>
              <th scope="col">Target</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id}>
                <td>{when(r.at)}</td>
                <td>
                  {nameOf(r.actor.userId)} <span className="muted">({r.actor.via})</span>
                </td>
                <td>{r.action}</td>
                <td>
                  {r.targetType} {r.targetType === 'user' ? nameOf(r.targetId) : (r.targetId ?? '')}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
