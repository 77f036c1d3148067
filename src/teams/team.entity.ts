import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { User } from '../users/user.entity';

/** An organisation. Resources created with a team's token are owned by the team. */
@Entity({ tableName: 'teams' })
export class Team {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text' })
  name!: string;

  @ManyToOne(() => User, { deleteRule: 'restrict' })
  createdBy!: User;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}

export type TeamRole = 'owner' | 'member';

@Entity({ tableName: 'team_members' })
@Unique({ properties: ['team', 'user'] })
export class TeamMember {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Team, { deleteRule: 'cascade' })
  team!: Team;

  @ManyToOne(() => User, { deleteRule: 'cascade' })
  @Index()
  user!: User;

  @Property({ type: 'text' })
  role: Opt<TeamRole> = 'member';

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}
