import { Field, ObjectType } from 'type-graphql';
import type { SecretView } from './secret.service';

@ObjectType('Secret', {
  description: "One of the owner's named secrets. Its value is write-only: it is never answered.",
})
export class SecretType {
  @Field(() => String, { description: 'The environment variable a job gets it in.' })
  name!: string;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date, { description: 'When the value was last set.' })
  updatedAt!: Date;

  static from(s: SecretView): SecretType {
    return { name: s.name, createdAt: s.createdAt, updatedAt: s.updatedAt };
  }
}
