import { OWNER_KEY, type Parser } from './config.parser';
import { DNS_SUBDOMAIN } from './config.executors';

// Quotas, priorities and fair share (docs/governance.md).

const PRIORITY_KEY = /^(low|normal|high)$/;
/** Slurm account and QOS names. */
const SLURM_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export interface GovernanceSettings {
  /** Quotas, priorities and fair share (docs/governance.md). */
  governance: GovernanceConfig;
}

export interface GovernanceConfig {
  /** FAIR_SHARE_HALF_LIFE_HOURS: how fast an owner's past usage stops counting against it. */
  fairShareHalfLifeHours: number;
  /** QUOTA_MAX_RUNNING_JOBS: jobs an owner may have starting or running; null: unlimited. */
  maxRunningJobs: number | null;
  /** QUOTA_MAX_MACHINES (`gpu-a100=4,cpu=64`): machines an owner may use per machine type. */
  maxMachines: Readonly<Record<string, number>>;
  /** SLURM_ACCOUNTS_FILE (`user:<id>` / `team:<id>` -> account) and SLURM_DEFAULT_ACCOUNT. */
  slurmAccounts: Readonly<Record<string, string>>;
  slurmDefaultAccount: string | undefined;
  /** SLURM_QOS_LOW, _NORMAL, _HIGH: the QOS of each priority; without one, `--nice` orders them. */
  slurmQos: Readonly<Partial<Record<'low' | 'normal' | 'high', string>>>;
  /** KUBERNETES_PRIORITY_CLASSES (`low=batch-low,high=interactive`): PriorityClass per priority. */
  kubernetesPriorityClasses: Readonly<Partial<Record<'low' | 'normal' | 'high', string>>>;
  /**
   * KUBERNETES_KUEUE_QUEUES (`team:<id>=lab,*=jobs-{owner_id}`): each owner's Kueue LocalQueue
   * (`*`: every other owner; `{owner_type}`, `{owner_id}` filled in). Empty: Kueue is not used.
   */
  kueueQueues: Readonly<Record<string, string>>;
}

export function governanceConfig(p: Parser): GovernanceSettings {
  return {
    governance: {
      fairShareHalfLifeHours: p.num('FAIR_SHARE_HALF_LIFE_HOURS', 24, 0.001, 24 * 365),
      maxRunningJobs:
        p.raw('QUOTA_MAX_RUNNING_JOBS') === undefined
          ? null
          : p.int('QUOTA_MAX_RUNNING_JOBS', 0, 0, 1_000_000),
      maxMachines: Object.fromEntries(
        Object.entries(p.pairs('QUOTA_MAX_MACHINES', /^\S{1,64}$/, /^\d{1,7}$/, 'machine-type=count')).map(
          ([k, v]) => [k, Number(v)],
        ),
      ),
      slurmAccounts: p.ownerMap('SLURM_ACCOUNTS_FILE', SLURM_NAME),
      slurmDefaultAccount: p.matching('SLURM_DEFAULT_ACCOUNT', SLURM_NAME, 'a Slurm account name'),
      slurmQos: Object.fromEntries(
        (['low', 'normal', 'high'] as const)
          .map((k) => [k, p.matching(`SLURM_QOS_${k.toUpperCase()}`, SLURM_NAME, 'a Slurm QOS name')])
          .filter(([, v]) => v),
      ),
      kubernetesPriorityClasses: p.pairs(
        'KUBERNETES_PRIORITY_CLASSES',
        PRIORITY_KEY,
        DNS_SUBDOMAIN,
        'low|normal|high=<PriorityClass name>',
      ),
      kueueQueues: p.pairs(
        'KUBERNETES_KUEUE_QUEUES',
        new RegExp(`${OWNER_KEY.source}|^\\*$`),
        /^[a-z0-9{}_-]{1,253}$/,
        'user:<id>|team:<id>|*=<LocalQueue name>',
      ),
    },
  };
}
