import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import { ownerOf, type OwnerType, type Principal } from '../common/principal';
import type { GovernanceConfig } from '../config';
import { DISPATCH_TASK } from '../jobs/job.queue';
import { authorize } from '../teams/team.roles';

/** What an operator sets for an owner (PUT replaces all of it; null: the configured default). */
export interface QuotaInput {
  maxRunningJobs?: number | null;
  /** Machines in use per machine type; a null limit: unlimited for this owner. */
  machines?: readonly { machineType: string; limit?: number | null }[] | null;
  shares?: number | null;
}

/** An owner's quotas as they apply now (defaults filled in), with what is in use. */
export interface QuotaView {
  ownerType: OwnerType;
  ownerId: string;
  maxRunningJobs: number | null;
  runningJobs: number;
  machines: { machineType: string; limit: number | null; inUse: number }[];
  shares: number;
  /** Machine-seconds of ended jobs, decayed with FAIR_SHARE_HALF_LIFE_HOURS to now. */
  recentUsage: number;
}

const MAX_LIMIT = 1_000_000;
/** Dispatch tasks queued at most when a quota changes: enough to fill every free slot. */
const WAKE_TASKS = 1000;

/**
 * Quotas and fair-share shares per owner (docs/governance.md): operators (ADMIN_SUBJECTS) set
 * them, owners read theirs with what they use. The dispatch (src/jobs, job.dispatch.sql.ts)
 * applies them in its claiming statement, reading `owner_quotas` and `owner_usage`.
 */
export class QuotaService {
  constructor(
    private readonly orm: MikroORM,
    private readonly config: GovernanceConfig,
  ) {}

  async set(principal: Principal, ownerType: string, ownerId: string, input: QuotaInput): Promise<QuotaView> {
    if (!principal.isAdmin) throw new AppError('FORBIDDEN', 'only operators (ADMIN_SUBJECTS) set quotas');
    if (ownerType !== 'user' && ownerType !== 'team')
      throw AppError.validation({ ownerType: 'must be user or team' });
    const id = ownerId.toLowerCase();
    const problems: Record<string, string> = {};
    const count = (v: number | null | undefined) =>
      v === undefined || v === null || (Number.isInteger(v) && v >= 0 && v <= MAX_LIMIT);
    if (!count(input.maxRunningJobs))
      problems.maxRunningJobs = `must be an integer from 0 to ${MAX_LIMIT}, or null`;
    const machines = input.machines ?? [];
    machines.forEach((m, i) => {
      if (!/^\S{1,64}$/.test(m.machineType))
        problems[`machines.${i}.machineType`] = 'must be a machine type name';
      if (!count(m.limit))
        problems[`machines.${i}.limit`] = `must be an integer from 0 to ${MAX_LIMIT}, or null`;
    });
    if (new Set(machines.map((m) => m.machineType)).size !== machines.length)
      problems.machines = 'names a machine type twice';
    const shares = input.shares;
    if (
      shares !== undefined &&
      shares !== null &&
      !(Number.isFinite(shares) && shares > 0 && shares <= MAX_LIMIT)
    )
      problems.shares = `must be a number above 0, at most ${MAX_LIMIT}, or null`;
    if (Object.keys(problems).length) throw AppError.validation(problems);
    // An owner that does not exist is NOT_FOUND, as any id that names nothing.
    if (!isUuid(id)) throw new AppError('NOT_FOUND', `${ownerType} not found`);
    const em = this.orm.em.fork();
    const [exists] = await em.execute<{ n: string }[]>(
      `select count(*) as n from ${ownerType === 'user' ? 'users' : 'teams'} where id = ?`,
      [id],
    );
    if (Number(exists.n) === 0) throw new AppError('NOT_FOUND', `${ownerType} not found`);
    // The row and, for jobs that waited on the old quota, the dispatch tasks that claim them now.
    await em.execute(
      `with q as (
         insert into owner_quotas (owner_type, owner_id, max_running_jobs, machines, shares, updated_at)
         values (?, ?, ?, ?::jsonb, ?, now())
         on conflict (owner_type, owner_id) do update set max_running_jobs = excluded.max_running_jobs,
           machines = excluded.machines, shares = excluded.shares, updated_at = now()
         returning 1)
       select (select count(*) from q),
         (select count(graphile_worker.add_job('${DISPATCH_TASK}', '{}'::json, max_attempts => 5))
          from generate_series(1, least((select count(*) from jobs where status = 'queued' and owner_type = ? and owner_id = ?), ${WAKE_TASKS})))`,
      [
        ownerType,
        id,
        input.maxRunningJobs ?? null,
        JSON.stringify(Object.fromEntries(machines.map((m) => [m.machineType, m.limit ?? null]))),
        shares ?? null,
        ownerType,
        id,
      ],
    );
    return this.view(ownerType, id);
  }

  /** The quota of the principal's owner (a team's members read it; viewers too). */
  async get(principal: Principal): Promise<QuotaView> {
    authorize(principal, 'read', 'read the quota');
    const owner = ownerOf(principal);
    return this.view(owner.type, owner.id);
  }

  private async view(ownerType: OwnerType, ownerId: string): Promise<QuotaView> {
    const [row] = await this.orm.em.fork().execute<
      {
        max_running_jobs: number | null;
        machines: Record<string, number | null> | null;
        shares: number | null;
        running_jobs: number | null;
        running_machines: Record<string, number> | null;
        recent_usage: number | null;
      }[]
    >(
      `select q.max_running_jobs, q.machines, q.shares, u.running_jobs, u.running_machines,
              u.usage * power(0.5, extract(epoch from now() - u.decayed_at) / ?) as recent_usage
       from (select 1) one
       left join owner_quotas q on q.owner_type = ? and q.owner_id = ?
       left join owner_usage u on u.owner_type = ? and u.owner_id = ?`,
      [this.config.fairShareHalfLifeHours * 3600, ownerType, ownerId, ownerType, ownerId],
    );
    const set = row.machines ?? {};
    const inUse = row.running_machines ?? {};
    const types = [
      ...new Set([...Object.keys(this.config.maxMachines), ...Object.keys(set), ...Object.keys(inUse)]),
    ];
    return {
      ownerType,
      ownerId,
      maxRunningJobs: row.max_running_jobs ?? this.config.maxRunningJobs,
      runningJobs: row.running_jobs ?? 0,
      machines: types.sort().map((machineType) => ({
        machineType,
        limit: Object.hasOwn(set, machineType)
          ? set[machineType]
          : (this.config.maxMachines[machineType] ?? null),
        inUse: inUse[machineType] ?? 0,
      })),
      shares: row.shares ?? 1,
      recentUsage: Number(row.recent_usage ?? 0),
    };
  }
}
