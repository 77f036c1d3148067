import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { GB_MONTH } from './billing.meter';
import { divRound, formatDecimal, formatScaled } from '../common/decimal';
import type { ModelUsage, UsageBucket, UsageLine, UsageReport } from './billing.service';

export enum UsageGranularity {
  DAY = 'day',
  MONTH = 'month',
}
registerEnumType(UsageGranularity, {
  name: 'UsageGranularity',
  description: 'Buckets of UTC days or months.',
});

const DECIMAL = 'Decimal string';
const MONEY = 'Decimal string in the currency, with its minor-unit digits.';

/** Weight x microseconds as a decimal string of seconds, without trailing zeros. */
const seconds = (micros: bigint) => formatScaled(micros, 6, true);
const money = (report: UsageReport, units: bigint) => formatScaled(units, report.prices.minorDigits);

@ObjectType('UsageOwner')
export class UsageOwnerType {
  @Field(() => String, { description: '`user` or `team`.' })
  type!: string;

  @Field(() => ID)
  id!: string;
}

@ObjectType('UsagePeriod', { description: '`[start, end)`: the end is excluded.' })
export class UsagePeriodType {
  @Field(() => Date)
  start!: Date;

  @Field(() => Date)
  end!: Date;
}

@ObjectType('UsageItem', { description: 'Compute of one machine type.' })
export class UsageItemType {
  @Field(() => String)
  machineType!: string;

  @Field(() => Int, { description: 'Jobs that ran during the period.' })
  jobs!: number;

  @Field(() => String, { description: `${DECIMAL}: machine-seconds (run time x machine count).` })
  seconds!: string;

  @Field(() => String, { description: `${DECIMAL}: the price of one machine-second.` })
  unitPrice!: string;

  @Field(() => String, { description: MONEY })
  amount!: string;
}

@ObjectType('StorageUsage', { description: 'Media kept during the period, prorated to the microsecond.' })
export class StorageUsageType {
  @Field(() => String, { description: `${DECIMAL}: bytes x seconds stored.` })
  byteSeconds!: string;

  @Field(() => String, { description: `${DECIMAL}, 6 decimals: GB (10^9 bytes) x months of 730 hours.` })
  gbMonths!: string;

  @Field(() => String, { description: `${DECIMAL}: the price of one GB-month.` })
  unitPrice!: string;

  @Field(() => String, { description: MONEY })
  amount!: string;
}

@ObjectType('UsageBucket', {
  description: 'One UTC day or month of the period (the first and last may be partial).',
})
export class UsageBucketType {
  @Field(() => Date)
  start!: Date;

  @Field(() => Date)
  end!: Date;

  @Field(() => String, { description: `${DECIMAL}: machine-seconds.` })
  computeSeconds!: string;

  @Field(() => String, { description: MONEY })
  computeAmount!: string;

  @Field(() => String, { description: `${DECIMAL}: bytes x seconds.` })
  storageByteSeconds!: string;

  @Field(() => String, { description: MONEY })
  storageAmount!: string;

  @Field(() => String, { description: MONEY })
  total!: string;
}

@ObjectType('ModelUsage', { description: 'Compute of the jobs of one model.' })
export class ModelUsageType {
  @Field(() => ID)
  modelId!: string;

  @Field(() => String, { nullable: true, description: 'Null when the model has been deleted since.' })
  name!: string | null;

  @Field(() => Int)
  jobs!: number;

  @Field(() => String, { description: `${DECIMAL}: machine-seconds.` })
  seconds!: string;

  @Field(() => String, { description: MONEY })
  amount!: string;
}

@ObjectType('Usage', {
  description:
    'Metered compute and storage of the viewer (a team token: its team) over a period, priced. Amounts of the items and storage are rounded half up to the minor unit; `total` is their sum; `series` and `models` add up to them exactly.',
})
export class UsageType {
  @Field(() => UsageOwnerType)
  owner!: UsageOwnerType;

  @Field(() => UsagePeriodType)
  period!: UsagePeriodType;

  @Field(() => String, { description: 'ISO 4217 code.' })
  currency!: string;

  @Field(() => [UsageItemType], { description: 'One per machine type used, by machine type.' })
  items!: UsageItemType[];

  @Field(() => StorageUsageType)
  storage!: StorageUsageType;

  @Field(() => String, { description: MONEY })
  total!: string;

  /** What `series` and `models` break down; not a field. */
  report!: UsageReport;

  static from(report: UsageReport): UsageType {
    const item = (l: UsageLine): UsageItemType => ({
      machineType: l.machineType,
      jobs: l.jobs,
      seconds: seconds(l.micros),
      unitPrice: formatDecimal(l.unitPrice),
      amount: money(report, l.amount),
    });
    const { storage } = report;
    return Object.assign(new UsageType(), {
      owner: report.owner,
      period: { start: report.start, end: report.end },
      currency: report.prices.currency,
      items: report.items.map(item),
      storage: {
        byteSeconds: seconds(storage.byteMicros),
        // byte-microseconds / byte-seconds of a GB-month = millionths of a GB-month
        gbMonths: formatScaled(divRound(storage.byteMicros, GB_MONTH), 6),
        unitPrice: formatDecimal(storage.unitPrice),
        amount: money(report, storage.amount),
      },
      total: money(report, report.total),
      report,
    });
  }

  bucket(b: UsageBucket): UsageBucketType {
    return {
      start: b.start,
      end: b.end,
      computeSeconds: seconds(b.computeMicros),
      computeAmount: money(this.report, b.computeAmount),
      storageByteSeconds: seconds(b.storageByteMicros),
      storageAmount: money(this.report, b.storageAmount),
      total: money(this.report, b.computeAmount + b.storageAmount),
    };
  }

  model(m: ModelUsage): ModelUsageType {
    return {
      modelId: m.modelId,
      name: m.name,
      jobs: m.jobs,
      seconds: seconds(m.micros),
      amount: money(this.report, m.amount),
    };
  }
}
