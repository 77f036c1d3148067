import { Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { QuotaView } from './quota.service';

@ObjectType('MachineQuota')
export class MachineQuotaType {
  @Field(() => String)
  machineType!: string;

  @Field(() => Int, { nullable: true, description: 'Machines of this type in use at most; null: unlimited.' })
  limit!: number | null;

  @Field(() => Int, { description: 'Machines of this type its starting and running jobs use now.' })
  inUse!: number;
}

@ObjectType('Quota', {
  description:
    "An owner's quotas and fair-share weight as they apply now, with what is in use (docs/governance.md).",
})
export class QuotaType {
  @Field(() => String)
  ownerType!: string;

  @Field(() => ID)
  ownerId!: string;

  @Field(() => Int, {
    nullable: true,
    description: 'Jobs starting or running at once at most; null: unlimited.',
  })
  maxRunningJobs!: number | null;

  @Field(() => Int)
  runningJobs!: number;

  @Field(() => [MachineQuotaType])
  machines!: MachineQuotaType[];

  @Field(() => Float, {
    description: 'Weight in fair share (default 1): twice the shares, twice the usage for the same turn.',
  })
  shares!: number;

  @Field(() => Float, {
    description: 'Machine-seconds of its ended jobs, decayed with FAIR_SHARE_HALF_LIFE_HOURS.',
  })
  recentUsage!: number;

  static from(v: QuotaView): QuotaType {
    return { ...v, machines: v.machines.map((m) => ({ ...m })) };
  }
}

@InputType()
export class MachineLimitInput {
  @Field(() => String)
  machineType!: string;

  @Field(() => Int, {
    nullable: true,
    description: 'Null: unlimited for this owner (over a configured default).',
  })
  limit?: number | null;
}

@InputType()
export class SetQuotaInput {
  @Field(() => Int, { nullable: true, description: 'Null: QUOTA_MAX_RUNNING_JOBS.' })
  maxRunningJobs?: number | null;

  @Field(() => [MachineLimitInput], {
    nullable: true,
    description: 'Per machine type; types not named take QUOTA_MAX_MACHINES.',
  })
  machines?: MachineLimitInput[] | null;

  @Field(() => Float, { nullable: true, description: 'Fair-share weight; null: 1.' })
  shares?: number | null;
}
