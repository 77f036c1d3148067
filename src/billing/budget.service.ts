import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import { ownerOf, type Owner, type Principal } from '../common/principal';
import { machinePrice, type PriceList } from '../common/price-list';
import { formatDecimal, MAX_PRICE_DECIMALS } from '../common/decimal';
import { raw, sql } from '../db/sql';
import type { AuditLog } from '../teams/audit.service';
import { authorize } from '../teams/team.roles';
import {
  PERIOD_START_AT_SQL,
  PERIOD_START_SQL,
  PERIOD_STOP_SQL,
  priceSql,
  storageSpentSql,
} from './billing.spend';

export type BudgetAction = 'block' | 'notify';

/** An owner's budget and where the month stands; money as decimal strings with the currency's digits. */
export interface BudgetView {
  /** Null: no budget set. */
  monthlyLimit: string | null;
  currency: string;
  /** Ended jobs' cost this month, plus what running jobs and stored files cost so far. */
  spent: string;
  /** What unfinished jobs may still cost at most (their timeouts). */
  committed: string;
  periodStart: Date;
  periodEnd: Date;
  action: BudgetAction | null;
  webhook: string | null;
}

export interface BudgetInput {
  monthlyLimit: unknown;
  action: unknown;
  webhook?: string | null;
}

/** A budget's webhook checked as deployments' are (WebhookService, wired in server/services.ts). */
export interface BudgetWebhookCheck {
  check(input: { webhook?: string | null }): Promise<{ webhook: string | null }>;
}

/** What a job may cost at most: the fields of its model that fix it. */
export interface MaxCostFacts {
  machineType: string;
  machineCount: number;
  timeoutSeconds: number;
}

const ACTIONS: readonly BudgetAction[] = ['block', 'notify'];

interface StatusRow {
  monthly_limit: string | null;
  action: BudgetAction | null;
  webhook: string | null;
  spent: string;
  committed: string;
  period_start: string;
  period_end: string;
  requested?: string;
  over?: boolean;
}

/**
 * Monthly budgets (docs/governance.md): an owner's limit, the month's spend read from the
 * `spend_daily` rollup and one aggregate over the owner's unfinished jobs (an index of them), and
 * the refusal of work that could pass a `block` limit. Thresholds are announced by the statement
 * that ends jobs (billing.spend.ts).
 */
export class BudgetService {
  constructor(
    private readonly orm: MikroORM,
    private readonly prices: PriceList,
    private readonly webhooks: BudgetWebhookCheck,
    private readonly audit: AuditLog,
  ) {}

  async get(principal: Principal): Promise<BudgetView> {
    authorize(principal, 'read', 'read the budget');
    const [row] = await this.status(this.orm.em.fork(), ownerOf(principal), null);
    return this.view(row);
  }

  async set(principal: Principal, input: BudgetInput): Promise<BudgetView> {
    authorize(principal, 'own', 'change the budget');
    const limit = this.parseLimit(input.monthlyLimit);
    if (typeof input.action !== 'string' || !ACTIONS.includes(input.action as BudgetAction))
      throw AppError.validation({ action: `must be one of ${ACTIONS.join(', ')}` });
    const { webhook } = await this.webhooks.check({ webhook: input.webhook ?? null });
    const owner = ownerOf(principal);
    await this.orm.em.fork().transactional(async (em) => {
      await em.execute(
        `insert into budgets (owner_type, owner_id, monthly_limit, action, webhook, updated_at)
         values (?, ?, ?::numeric, ?, ?, now())
         on conflict (owner_type, owner_id) do update
           set monthly_limit = excluded.monthly_limit, action = excluded.action, webhook = excluded.webhook,
               updated_at = now()`,
        [owner.type, owner.id, limit, input.action, webhook],
      );
      this.audit.recordForTeam(em, principal, {
        action: 'budget.set',
        targetType: 'budget',
        details: { monthly_limit: limit, action: input.action, webhook },
      });
    });
    return this.get(principal);
  }

  /** The most a job of these facts may cost: timeout x machine price x machine count (exact decimal string). */
  maxCostOf(job: MaxCostFacts): string {
    const price = machinePrice(this.prices, job.machineType);
    return formatDecimal({
      units: price.units * BigInt(job.timeoutSeconds * job.machineCount),
      scale: price.scale,
    });
  }

  /**
   * Refuses (402 BUDGET_EXCEEDED, naming the figures) `jobCount` jobs of at most `maxCostPerJob`
   * each when the owner's `block` budget could be passed: the month's spend, plus what its
   * unfinished jobs may still cost, plus these. One statement of constant cost (it reads nothing
   * without a blocking budget); `em` runs it in a caller's transaction.
   */
  async assertAllows(
    owner: Owner,
    maxCostPerJob: string,
    jobCount: number,
    em?: EntityManager,
  ): Promise<void> {
    const [row] = await this.status(em ?? this.orm.em.fork(), owner, {
      perJob: maxCostPerJob,
      count: jobCount,
    });
    if (!row?.over) return;
    const v = this.view(row);
    const requested = this.money(row.requested!);
    throw new AppError(
      'BUDGET_EXCEEDED',
      `this would pass the monthly budget of ${v.monthlyLimit} ${v.currency}: spent ${v.spent}, ` +
        `committed ${v.committed} (at most, by unfinished jobs), and up to ${requested} for ${jobCount} new ` +
        `job${jobCount === 1 ? '' : 's'}`,
      {
        monthly_limit: v.monthlyLimit!,
        spent: v.spent,
        committed: v.committed,
        requested,
        currency: v.currency,
      },
    );
  }

  /**
   * The owner's budget with the month's spend and commitments. With `request`, only a blocking
   * budget is read (none: no row) and `over` says whether the request would pass it.
   */
  private async status(
    em: EntityManager,
    owner: Owner,
    request: { perJob: string; count: number } | null,
  ): Promise<StatusRow[]> {
    const start = PERIOD_START_AT_SQL;
    const base = request
      ? sql`select * from budgets where owner_type = ${owner.type} and owner_id = ${owner.id} and action = 'block'`
      : sql`select b.* from (select 1) one left join budgets b on b.owner_type = ${owner.type} and b.owner_id = ${owner.id}`;
    const requested = request ? sql`${request.perJob}::numeric * ${request.count}::int` : raw('0');
    const statement = sql`
      select b.monthly_limit::text, b.action, b.webhook, s.spent::text, s.committed::text,
        to_char(${PERIOD_START_SQL}, 'YYYY-MM-DD') as period_start, to_char(${PERIOD_STOP_SQL}, 'YYYY-MM-DD') as period_end,
        (${requested})::text as requested,
        s.spent + s.committed + ${requested} > b.monthly_limit as over
      from (${base}) b cross join lateral (
        select coalesce((select sum(x.machine_seconds * ${priceSql(this.prices, 'x')}) from spend_daily x
                  where x.owner_type = ${owner.type} and x.owner_id = ${owner.id}
                    and x.day >= ${PERIOD_START_SQL} and x.day < ${PERIOD_STOP_SQL}), 0)
             + ${storageSpentSql(this.prices, sql`${owner.type}`, sql`${owner.id}`)}
             + coalesce(sum(case when j.started_at is null then 0 else j.machine_count
                 * extract(epoch from greatest(now() - greatest(j.started_at, ${start}), interval '0')) end
                 * ${priceSql(this.prices, 'j')}), 0) as spent,
          coalesce(sum(j.machine_count * greatest(j.timeout_seconds
                 - coalesce(extract(epoch from now() - j.started_at), 0), 0) * ${priceSql(this.prices, 'j')}), 0)
            as committed
        from jobs j
        where j.owner_type = ${owner.type} and j.owner_id = ${owner.id} and j.status in ('queued', 'starting', 'running')
      ) s`.compile();
    return em.execute(statement.text, statement.params);
  }

  private view(row: StatusRow): BudgetView {
    return {
      monthlyLimit: row.monthly_limit === null ? null : this.money(row.monthly_limit),
      currency: this.prices.currency,
      spent: this.money(row.spent),
      committed: this.money(row.committed),
      periodStart: new Date(`${row.period_start}T00:00:00Z`),
      periodEnd: new Date(`${row.period_end}T00:00:00Z`),
      action: row.action,
      webhook: row.webhook,
    };
  }

  /** A numeric's text rounded half up to the currency's minor unit. */
  private money(text: string): string {
    const digits = this.prices.minorDigits;
    const [int, frac = ''] = text.split('.');
    const scaled = BigInt(int + frac.padEnd(digits + 1, '0').slice(0, digits + 1));
    const units = (scaled + 5n) / 10n;
    const s = units.toString().padStart(digits + 1, '0');
    return digits ? `${s.slice(0, s.length - digits)}.${s.slice(s.length - digits)}` : s;
  }

  /** A positive decimal with at most the currency's minor-unit digits (a string, or a JSON number written so). */
  private parseLimit(value: unknown): string {
    const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
    const digits = this.prices.minorDigits;
    const fraction = digits ? `(\\.\\d{1,${Math.min(digits, MAX_PRICE_DECIMALS)}})?` : '';
    const pattern = new RegExp(`^\\d{1,15}${fraction}$`);
    if (typeof text !== 'string' || !pattern.test(text) || !/[1-9]/.test(text))
      throw AppError.validation({
        monthlyLimit: `must be a positive decimal string with at most ${digits} decimals (${this.prices.currency})`,
      });
    return text;
  }
}
