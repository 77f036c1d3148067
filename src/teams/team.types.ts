import { Field, ID, InputType, ObjectType, registerEnumType } from 'type-graphql';
import { Connection } from '../graphql/graphql.helpers';
import type { TeamView } from './team.service';

export enum TeamRoleType {
  OWNER = 'owner',
  MEMBER = 'member',
}
registerEnumType(TeamRoleType, { name: 'TeamRole' });

@ObjectType('Team', { description: 'An organisation. What its tokens create belongs to it.' })
export class TeamType {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => TeamRoleType, { description: "The viewer's role in the team." })
  role!: TeamRoleType;

  @Field(() => Date)
  createdAt!: Date;

  static from({ team, role }: TeamView): TeamType {
    return Object.assign(new TeamType(), {
      id: team.id,
      name: team.name,
      role: role as TeamRoleType,
      createdAt: team.createdAt,
    });
  }
}

export const TeamConnection = Connection(TeamType, 'Team');

@InputType()
export class CreateTeamInput {
  @Field(() => String)
  name!: string;
}
