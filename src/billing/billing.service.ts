import type { MikroORM } from '@mikro-orm/postgresql';
import { actingAs, ownerOf, type Principal } from '../common/principal';
import { Model } from '../models/model.entity';
import { visibleTo } from '../models/model.service';
import { GB_MONTH, amountOf, integrate, type Span } from './billing.meter';
import { allocate, parseMicros, type Decimal } from '../common/decimal';
import { bucketsOf, parsePeriod, type Granularity, type Period } from './billing.period';
import { machinePrice, type PriceList } from '../common/price-list';
import {
  jobIntervals,
  rollupSums,
  runningIntervals,
  spanSums,
  storageIntervals,
  storageRollupSums,
  type SpanSumRow,
  type GroupKey,
  type Window,
} from './billing.sql';

export interface UsageInput {
  from?: string | null;
  to?: string | null;
  granularity?: Granularity | null;
}

/** Compute of one machine type: `micros` is machine-microseconds (run time x machine count). */
export interface UsageLine {
  machineType: string;
  jobs: number;
  micros: bigint;
  unitPrice: Decimal;
  /** Minor units of the currency. */
  amount: bigint;
}

export interface StorageLine {
  byteMicros: bigint;
  unitPrice: Decimal;
  amount: bigint;
}

interface ModelFact {
  machineType: string;
  modelId: string;
  jobs: number;
  micros: bigint;
}

/** An owner's usage over a period, priced; `series` and `models` break it down further. */
export interface UsageReport extends Window {
  end: Date;
  granularity: Granularity;
  prices: PriceList;
  items: UsageLine[];
  storage: StorageLine;
  total: bigint;
  facts: ModelFact[];
}

export interface UsageBucket extends Period {
  computeMicros: bigint;
  computeAmount: bigint;
  storageByteMicros: bigint;
  storageAmount: bigint;
}

export interface ModelUsage {
  modelId: string;
  /** Null when the model has been deleted since. */
  name: string | null;
  jobs: number;
  micros: bigint;
  amount: bigint;
}

/** Rows of `spanSums` with their numbers parsed. */
type Sums = (Span & Pick<SpanSumRow, 'count' | GroupKey>)[];

/**
 * Metered compute and storage of an owner, priced with the configured price list. Everything
 * is summed by PostgreSQL over indexed rows; amounts are integers of the currency's minor unit,
 * rounded half up once per line; breakdowns are allocated so that they add up to the lines.
 */
export class BillingService {
  constructor(
    private readonly orm: MikroORM,
    private readonly prices: PriceList,
    /** Read ended jobs and storage from their rollups where the period is whole UTC days (false: sum the rows). */
    private readonly rollup = true,
  ) {}

  async usage(principal: Principal, input: UsageInput): Promise<UsageReport> {
    const now = new Date();
    const period = parsePeriod(input, now);
    const w: Window = { owner: ownerOf(principal), start: period.start, asOf: min(period.end, now) };
    const [jobs, stored] = await Promise.all([
      this.sums('jobs', w, [period], ['machine_type', 'model_id']),
      this.sums('storage', w, [period]),
    ]);
    const { prices } = this;
    const facts = groupBy(jobs, (r) => JSON.stringify([r.machine_type, r.model_id])).map((rows) => ({
      machineType: rows[0].machine_type!,
      modelId: rows[0].model_id!,
      jobs: rows.reduce((n, r) => n + r.count, 0),
      micros: integrate([period], w.asOf, rows)[0],
    }));
    const items = groupBy(facts, (f) => f.machineType)
      .map((group): UsageLine => {
        const micros = group.reduce((a, f) => a + f.micros, 0n);
        const unitPrice = machinePrice(prices, group[0].machineType);
        return {
          machineType: group[0].machineType,
          jobs: group.reduce((n, f) => n + f.jobs, 0),
          micros,
          unitPrice,
          amount: amountOf(micros, unitPrice, prices.minorDigits),
        };
      })
      .sort((a, b) => (a.machineType < b.machineType ? -1 : 1));
    const byteMicros = integrate([period], w.asOf, stored)[0];
    const storage: StorageLine = {
      byteMicros,
      unitPrice: prices.perGbMonth,
      amount: amountOf(byteMicros, prices.perGbMonth, prices.minorDigits, GB_MONTH),
    };
    return {
      ...w,
      end: period.end,
      granularity: input.granularity ?? 'day',
      prices,
      items,
      storage,
      total: items.reduce((a, l) => a + l.amount, storage.amount),
      facts,
    };
  }

  /** The report per UTC day or month; each line's amount is spread over the buckets exactly. */
  async series(report: UsageReport): Promise<UsageBucket[]> {
    const buckets = bucketsOf(report, report.granularity);
    const [jobs, stored] = await Promise.all([
      this.sums('jobs', report, buckets, ['machine_type']),
      this.sums('storage', report, buckets),
    ]);
    const series = buckets.map((b): UsageBucket => ({
      ...b,
      computeMicros: 0n,
      computeAmount: 0n,
      storageByteMicros: 0n,
      storageAmount: 0n,
    }));
    for (const line of report.items) {
      const micros = integrate(
        buckets,
        report.asOf,
        jobs.filter((r) => r.machine_type === line.machineType),
      );
      allocate(line.amount, micros).forEach((amount, i) => {
        series[i].computeMicros += micros[i];
        series[i].computeAmount += amount;
      });
    }
    const byteMicros = integrate(buckets, report.asOf, stored);
    allocate(report.storage.amount, byteMicros).forEach((amount, i) => {
      series[i].storageByteMicros = byteMicros[i];
      series[i].storageAmount = amount;
    });
    return series;
  }

  /** Compute per model, most expensive first; deleted models keep their id, without a name. */
  async models(report: UsageReport): Promise<ModelUsage[]> {
    const byModel = new Map<string, ModelUsage>();
    for (const line of report.items) {
      const facts = report.facts.filter((f) => f.machineType === line.machineType);
      const amounts = allocate(
        line.amount,
        facts.map((f) => f.micros),
      );
      facts.forEach((f, i) => {
        const m = byModel.get(f.modelId) ?? {
          modelId: f.modelId,
          name: null,
          jobs: 0,
          micros: 0n,
          amount: 0n,
        };
        m.jobs += f.jobs;
        m.micros += f.micros;
        m.amount += amounts[i];
        byModel.set(f.modelId, m);
      });
    }
    const ids = [...byModel.keys()];
    // A model since made private by another owner stays nameless here, as a deleted one.
    const models = ids.length
      ? await this.orm.em
          .fork()
          .find(
            Model,
            { $and: [{ id: { $in: ids } }, visibleTo(actingAs(report.owner))] },
            { fields: ['id', 'name'] },
          )
      : [];
    for (const model of models) byModel.get(model.id)!.name = model.name;
    return [...byModel.values()].sort(
      (a, b) => cmp(b.amount, a.amount) || cmp(b.micros, a.micros) || (a.modelId < b.modelId ? -1 : 1),
    );
  }

  /**
   * Job or file intervals summed per bucket and key; nothing before the window opens. Jobs have
   * few distinct weights (machine counts), files as many as sizes.
   */
  private async sums(
    what: 'jobs' | 'storage',
    w: Window,
    buckets: Period[],
    keys: GroupKey[] = [],
  ): Promise<Sums> {
    const starts = buckets.filter((b) => b.start < w.asOf).map((b) => b.start);
    if (!starts.length) return [];
    const jobs = what === 'jobs';
    const stop = buckets[buckets.length - 1].end;
    // Ended jobs and storage from their rollups (their days are whole UTC days), running jobs
    // from their rows.
    const fromRollup = this.rollup && isMidnight(w.start) && isMidnight(stop);
    const statements =
      !jobs && fromRollup
        ? [storageRollupSums(w, stop, starts)]
        : [
            spanSums(
              !jobs ? storageIntervals(w) : fromRollup ? runningIntervals(w) : jobIntervals(w),
              w,
              starts,
              keys,
              jobs,
            ),
          ];
    if (jobs && fromRollup) statements.push(rollupSums(w.owner, w.start, stop, starts, keys));
    const rows = (
      await Promise.all(
        statements.map(({ text, values }): Promise<SpanSumRow[]> =>
          this.orm.em.getConnection().execute(text, values),
        ),
      )
    ).flat();
    return rows.map((r) => ({
      ...r,
      weight: BigInt(r.weight),
      fromStart: parseMicros(r.from_start),
      toEnd: parseMicros(r.to_end),
    }));
  }
}

function isMidnight(d: Date): boolean {
  return d.getTime() % 86_400_000 === 0;
}

function min(a: Date, b: Date): Date {
  return a < b ? a : b;
}

function cmp(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function groupBy<T>(items: T[], key: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group) group.push(item);
    else groups.set(key(item), [item]);
  }
  return [...groups.values()];
}
