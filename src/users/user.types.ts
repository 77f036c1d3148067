import { Field, ID, ObjectType } from 'type-graphql';
import type { Principal } from '../auth/principal';

@ObjectType('Viewer', {
  description: 'The caller: the user behind the credential, and the team when it is a team token.',
})
export class ViewerType {
  @Field(() => ID)
  id!: string;

  @Field(() => String, { description: "The identity provider's subject (user id)." })
  userId!: string;

  @Field(() => String)
  username!: string;

  @Field(() => String, { nullable: true })
  email!: string | null;

  @Field(() => Boolean)
  emailVerified!: boolean;

  @Field(() => String, { nullable: true })
  name!: string | null;

  @Field(() => String, { nullable: true })
  nickname!: string | null;

  @Field(() => String, { nullable: true })
  picture!: string | null;

  @Field(() => String, { nullable: true })
  phoneNumber!: string | null;

  @Field(() => ID, { nullable: true, description: 'Set when the credential is a team token.' })
  teamId!: string | null;

  @Field(() => String, {
    nullable: true,
    description:
      'Acting for a team: the role this credential has in it (`viewer`, `member`, `admin`, `owner`).',
  })
  teamRole!: string | null;

  @Field(() => Boolean)
  isAdmin!: boolean;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date)
  updatedAt!: Date;

  static from({ user, team, teamRole, isAdmin }: Principal): ViewerType {
    return Object.assign(new ViewerType(), {
      id: user.id,
      userId: user.subject,
      username: user.username,
      email: user.email,
      emailVerified: user.emailVerified,
      name: user.name,
      nickname: user.nickname,
      picture: user.picture,
      phoneNumber: user.phoneNumber,
      teamId: team?.id ?? null,
      teamRole,
      isAdmin,
      createdAt: user.createdAt,
      updatedAt: user.updatedAt,
    });
  }
}
