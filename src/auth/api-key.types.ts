import { Field, ID, InputType, ObjectType } from 'type-graphql';
import { Connection } from '../graphql/graphql.helpers';
import type { ApiKey } from './api-key.entity';

@ObjectType('ApiKey', { description: 'A long-lived credential. Its value is shown only when it is created.' })
export class ApiKeyType {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => ID, { nullable: true, description: 'Set for an organisation token.' })
  teamId!: string | null;

  @Field(() => String, { nullable: true, description: "A team key's role: `member` or `viewer`." })
  role!: string | null;

  @Field(() => ID, { description: "Who created it (a team key stays when they leave: it is the team's)." })
  createdById!: string;

  @Field(() => String, { nullable: true })
  createdByUsername!: string | null;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date, { nullable: true })
  lastUsedAt!: Date | null;

  @Field(() => Date, { nullable: true })
  revokedAt!: Date | null;

  static from(key: ApiKey): ApiKeyType {
    return Object.assign(new ApiKeyType(), {
      id: key.id,
      name: key.name,
      teamId: key.ownerType === 'team' ? key.ownerId : null,
      role: key.role,
      createdById: key.createdBy.id,
      createdByUsername: (key.createdBy.username as string | undefined) ?? null,
      createdAt: key.createdAt,
      lastUsedAt: key.lastUsedAt,
      revokedAt: key.revokedAt,
    });
  }
}

export const ApiKeyConnection = Connection(ApiKeyType, 'ApiKey');

@ObjectType()
export class CreatedApiKey {
  @Field(() => ApiKeyType)
  apiKey!: ApiKeyType;

  @Field(() => String, { description: 'The key itself. Store it now: it cannot be shown again.' })
  value!: string;
}

@InputType()
export class CreateApiKeyInput {
  @Field(() => String)
  name!: string;

  @Field(() => ID, { nullable: true, description: 'Makes the key an organisation token of this team.' })
  teamId?: string | null;

  @Field(() => String, { nullable: true, description: "A team key's role: `member` (default) or `viewer`." })
  role?: string | null;
}
