import { User } from '../users/user.entity';
import { TEAM_ROLES, type TeamRole } from './team.entity';
import { authorize, LEAST_ROLE, roleAllows, type TeamAction } from './team.roles';

const ACTIONS: TeamAction[] = ['read', 'write', 'manage', 'own'];

/** The matrix of docs/teams.md, row by row: which roles may. */
const MATRIX: Record<TeamAction, TeamRole[]> = {
  read: ['viewer', 'member', 'admin', 'owner'],
  write: ['member', 'admin', 'owner'],
  manage: ['admin', 'owner'],
  own: ['owner'],
};

describe('the role matrix', () => {
  it.each(ACTIONS.flatMap((a) => TEAM_ROLES.map((r) => [a, r] as const)))('%s as %s', (action, role) => {
    expect(roleAllows(role, action)).toBe(MATRIX[action].includes(role));
    const caller = { user: new User(), team: { id: 't' }, teamRole: role };
    if (MATRIX[action].includes(role)) expect(() => authorize(caller, action, 'do it')).not.toThrow();
    else
      expect(() => authorize(caller, action, 'do it')).toThrow(
        expect.objectContaining({ code: 'FORBIDDEN' }),
      );
  });

  it('names the least role of each action', () => {
    expect(LEAST_ROLE).toEqual({ read: 'viewer', write: 'member', manage: 'admin', own: 'owner' });
  });

  it('lets a caller acting as a user pass (the owner filter decides what it reaches)', () => {
    expect(() => authorize({ team: null, teamRole: null }, 'own', 'do it')).not.toThrow();
  });

  it('treats a team caller without a role as a viewer', () => {
    expect(() => authorize({ team: { id: 't' }, teamRole: null }, 'read', 'do it')).not.toThrow();
    expect(() => authorize({ team: { id: 't' }, teamRole: null }, 'write', 'do it')).toThrow();
  });
});
