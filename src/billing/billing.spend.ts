import { raw, sql, type Sql, type StatementPart } from '../db/sql';
import { formatDecimal } from '../common/decimal';
import { machinePricesJson, type PriceList } from '../common/price-list';
import { GB_MONTH } from './billing.meter';
import { DELIVER_TASK, deliveryKeySql } from '../webhooks/webhook.sql';

/** The worker task that mails a team's owners (or a user) that a budget threshold was crossed. */
export const BUDGET_MAIL_TASK = 'budget_mail';

/** Percentages of the monthly limit that are announced, once per period each. */
export const THRESHOLDS = [80, 100] as const;

/** The mail task's payload. */
export interface ThresholdNotice {
  ownerType: 'user' | 'team';
  ownerId: string;
  threshold: number;
  spent: string;
  monthlyLimit: string;
  currency: string;
  periodStart: string;
}

/** The price of one machine-second of the row `alias`'s machine type, as SQL numeric. */
export function priceSql(prices: PriceList, alias: string): Sql {
  const json = machinePricesJson(prices);
  return sql`coalesce(${json}::jsonb ->> ${raw(alias)}.machine_type, ${json}::jsonb ->> 'default')::numeric`;
}

/** The current budget period, `[start, stop)` as UTC dates: the calendar month of now(). */
export const PERIOD_START_SQL = raw(`date_trunc('month', now() at time zone 'UTC')::date`);
export const PERIOD_STOP_SQL = raw(
  `(date_trunc('month', now() at time zone 'UTC') + interval '1 month')::date`,
);
/** The current period's start as a timestamptz (UTC midnight). */
export const PERIOD_START_AT_SQL = raw(`(${PERIOD_START_SQL.compile().text})::timestamp at time zone 'UTC'`);

/**
 * The month's storage so far of the owner `ownerType`/`ownerId` (SQL expressions), priced, as SQL
 * numeric: the ended spans' days of the month in `storage_daily`, and each day's open spans in
 * `storage_open` from their start (or the month's) to now(). Rows per day, not per file.
 */
export function storageSpentSql(prices: PriceList, ownerType: Sql, ownerId: Sql): Sql {
  const start = PERIOD_START_AT_SQL;
  const at = raw(`(o.day::timestamp at time zone 'UTC')`);
  return sql`((coalesce((select sum(x.byte_seconds) from storage_daily x
       where x.owner_type = ${ownerType} and x.owner_id = ${ownerId}
         and x.day >= ${PERIOD_START_SQL} and x.day < ${PERIOD_STOP_SQL}), 0)
     + coalesce((select sum(case when ${at} < ${start} then o.bytes * extract(epoch from now() - ${start})
                   else o.bytes * extract(epoch from now() - ${at}) - o.byte_seconds_in end)
         from storage_open o where o.owner_type = ${ownerType} and o.owner_id = ${ownerId} and o.bytes <> 0), 0))
    * ${formatDecimal(prices.perGbMonth)}::numeric / ${GB_MONTH.toString()}::numeric)`;
}

/**
 * The part of the statement that ends jobs (JobStatementParts.ended): each job's machine-seconds
 * split over the UTC days it ran in, added to the `spend_daily` rollup (one row per owner, day,
 * machine type and model: set-based, whatever the number of jobs), and, for owners with a
 * budget, the thresholds their month's spend now crosses: a `budget_notices` row (once per
 * period and threshold, by its key), a signed `budget.threshold` webhook message, a team audit
 * record and, with `mail`, the owners' mail task. All commit if and only if the jobs end.
 *
 * The month's spend is the rollup's rows of the month as the upsert left them (RETURNING sees a
 * concurrent ender's committed addition to the same row) plus the snapshot's other rows.
 */
export function spendPart(prices: PriceList, opts: { mail: boolean }) {
  const digits = prices.minorDigits;
  return ({ jobs }: { jobs: string }): StatementPart => {
    const src = raw(jobs);
    const key = '(owner_type, owner_id, day, machine_type, model_id)';
    const ctes = [
      {
        name: 'spend_new',
        sql: sql`
        select u.owner_type, u.owner_id, (d at time zone 'UTC')::date as day, u.machine_type, u.model_id,
          sum(u.machine_count * extract(epoch from least(greatest(u.finished_at, u.started_at), d + interval '24 hours')
              - greatest(u.started_at, d))) as machine_seconds,
          (count(*) filter (where d = date_trunc('day', u.started_at, 'UTC')))::int as jobs
        from ${src} u cross join lateral generate_series(date_trunc('day', u.started_at, 'UTC'),
               greatest(u.finished_at, u.started_at), interval '24 hours') d
        where u.started_at is not null and u.finished_at is not null
        group by 1, 2, 3, 4, 5`,
      },
      {
        name: 'spend_up',
        sql: raw(`
        insert into spend_daily as s (owner_type, owner_id, day, machine_type, model_id, machine_seconds, jobs)
        select * from spend_new
        on conflict ${key} do update
          set machine_seconds = s.machine_seconds + excluded.machine_seconds, jobs = s.jobs + excluded.jobs
        returning s.*`),
      },
      {
        name: 'spend_budget',
        sql: sql`
        select b.owner_type, b.owner_id, b.monthly_limit, b.webhook, ${PERIOD_START_SQL} as period_start,
          ${PERIOD_STOP_SQL} as period_stop,
          coalesce((select sum(x.machine_seconds * ${priceSql(prices, 'x')}) from spend_daily x
             where x.owner_type = b.owner_type and x.owner_id = b.owner_id
               and x.day >= ${PERIOD_START_SQL} and x.day < ${PERIOD_STOP_SQL}
               and not exists (select 1 from spend_up u where (u.owner_type, u.owner_id, u.day, u.machine_type, u.model_id)
                                 = (x.owner_type, x.owner_id, x.day, x.machine_type, x.model_id))), 0)
          + coalesce((select sum(u.machine_seconds * ${priceSql(prices, 'u')}) from spend_up u
             where u.owner_type = b.owner_type and u.owner_id = b.owner_id
               and u.day >= ${PERIOD_START_SQL} and u.day < ${PERIOD_STOP_SQL}), 0)
          + ${storageSpentSql(prices, raw('b.owner_type'), raw('b.owner_id'))} as spent
        from budgets b where (b.owner_type, b.owner_id) in (select owner_type, owner_id from spend_new)`,
      },
      {
        name: 'spend_notice',
        sql: raw(`
        insert into budget_notices (owner_type, owner_id, period_start, threshold, spent, monthly_limit, at)
        select o.owner_type, o.owner_id, o.period_start, t.pct, o.spent, o.monthly_limit, now()
        from spend_budget o cross join (values ${THRESHOLDS.map((p) => `(${p})`).join(', ')}) t(pct)
        where o.spent * 100 >= o.monthly_limit * t.pct
        on conflict do nothing
        returning *`),
      },
      {
        name: 'spend_body',
        sql: sql`
        select n.owner_type, n.owner_id, n.threshold, b.webhook, json_build_object(
          'type', 'budget.threshold', 'owner', json_build_object('type', n.owner_type, 'id', n.owner_id),
          'threshold', n.threshold, 'monthly_limit', trim_scale(n.monthly_limit)::text,
          'spent', round(n.spent, ${digits}::int)::text, 'currency', ${prices.currency}::text,
          'period_start', to_char(b.period_start, 'YYYY-MM-DD"T"00:00:00.000"Z"'),
          'period_end', to_char(b.period_stop, 'YYYY-MM-DD"T"00:00:00.000"Z"'), 'at', now()) as body
        from spend_notice n join spend_budget b using (owner_type, owner_id)`,
      },
      {
        name: 'spend_msg',
        sql: raw(`
        insert into webhook_deliveries (id, job_id, owner_type, owner_id, event, url, status, attempts, body, created_at)
        select 'msg_' || replace(gen_random_uuid()::text, '-', ''), null, owner_type, owner_id, 'budget.threshold',
               webhook, 'pending', 0, body::text, clock_timestamp()
        from spend_body where webhook is not null
        returning id`),
      },
      {
        name: 'spend_go',
        sql: raw(`
        select graphile_worker.add_job('${DELIVER_TASK}', json_build_object('deliveryId', id, 'attempt', 1),
                 job_key => ${deliveryKeySql('id')}, max_attempts => 25)
        from spend_msg`),
      },
      {
        // The team's record of it; made by no member, so by the service (`actor_via` system).
        name: 'spend_audit',
        sql: raw(`
        insert into team_audit (id, team_id, created_at, actor_user_id, actor_via, actor_api_key_id, action,
                                target_type, target_id, details, client_address, request_id)
        select gen_random_uuid(), owner_id, now(), null, 'system', null, 'budget.threshold', 'budget', null,
               body::jsonb - 'type' - 'owner' - 'at', null, null
        from spend_body where owner_type = 'team'`),
      },
    ];
    const reads = [
      raw('(select count(*) from spend_up) as spend_days'),
      raw('(select count(*) from spend_go)'),
    ];
    if (opts.mail) {
      ctes.push({
        name: 'spend_mail',
        sql: raw(`
        select graphile_worker.add_job('${BUDGET_MAIL_TASK}', json_build_object('ownerType', owner_type,
                 'ownerId', owner_id, 'threshold', threshold, 'spent', body->>'spent',
                 'monthlyLimit', body->>'monthly_limit', 'currency', body->>'currency',
                 'periodStart', body->>'period_start'), max_attempts => 10)
        from spend_body`),
      });
      reads.push(raw('(select count(*) from spend_mail)'));
    }
    return { ctes, reads };
  };
}
