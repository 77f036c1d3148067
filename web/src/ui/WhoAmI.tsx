import { actingScope, setActingScope } from '../api/session';
import type { ViewerQuery } from '../generated/graphql';

type Team = ViewerQuery['teams']['nodes'][number];

/**
 * The header's "who": the signed-in user and whom the page acts for (themselves or a team), with
 * the switch. Small on purpose: the team pages will add their links here.
 */
export function WhoAmI({ viewer }: { viewer: ViewerQuery }) {
  return (
    <div className="whoami" aria-label="Signed in">
      <span className="whoami-user" title={viewer.me.email ?? undefined}>
        <span className="visually-hidden">Signed in as </span>
        {viewer.me.username}
      </span>
      <ActingAs teams={viewer.teams.nodes} compact />
    </div>
  );
}

/** Acts as the user or one of their teams from now on (the page re-reads as that principal). */
export function ActingAs({ teams, compact = false }: { teams: Team[]; compact?: boolean }) {
  const acting = actingScope();
  return (
    <div className={compact ? 'acting compact' : 'acting'}>
      <label htmlFor={compact ? 'acting-nav' : 'acting'}>Acting as</label>
      <select
        id={compact ? 'acting-nav' : 'acting'}
        value={acting ?? ''}
        onChange={(e) => setActingScope(e.target.value || null)}
      >
        <option value="">myself</option>
        {teams.map((t) => (
          <option key={t.id} value={t.id}>
            team {t.name}
          </option>
        ))}
      </select>
    </div>
  );
}
