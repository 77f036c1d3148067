import { GraphQLJSON } from 'graphql-scalars';
import { Field, Float, ID, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Connection } from '../graphql/graphql.helpers';
import { priorityOfRank } from './deployment.entity';
import { PriorityEnum } from './deployment.types';
import type { Job, JobTransition } from './job.entity';
import type { JobUpdate } from './job.live';
import type { LogLine } from './job.log';

export enum JobStatusEnum {
  QUEUED = 'queued',
  STARTING = 'starting',
  RUNNING = 'running',
  SUCCEEDED = 'succeeded',
  FAILED = 'failed',
  CANCELED = 'canceled',
}
registerEnumType(JobStatusEnum, {
  name: 'JobStatus',
  description: 'QUEUED -> STARTING -> RUNNING -> SUCCEEDED | FAILED | CANCELED; never back.',
});

export enum LogStreamEnum {
  STDOUT = 'stdout',
  STDERR = 'stderr',
}
registerEnumType(LogStreamEnum, { name: 'LogStream' });

/** The jobs list's orders (JOB_ORDERS). */
export enum JobOrderEnum {
  CREATED_AT = 'created_at',
  COST = 'cost',
  COST_ASC = 'cost_asc',
}
registerEnumType(JobOrderEnum, {
  name: 'JobOrder',
  description:
    'CREATED_AT: newest first (the default). COST: most expensive first; COST_ASC: cheapest first. By cost, only ended jobs are listed (their cost is final), priced with the current price list, ties by machine time then id; it takes no filter.',
});

@ObjectType('JobTransition', { description: 'One state change of a job.' })
export class JobTransitionType {
  @Field(() => JobStatusEnum, { nullable: true, description: 'Null for the creation.' })
  from!: JobStatusEnum | null;

  @Field(() => JobStatusEnum)
  to!: JobStatusEnum;

  @Field(() => Date)
  at!: Date;

  static from(t: JobTransition): JobTransitionType {
    return Object.assign(new JobTransitionType(), {
      from: t.fromStatus as JobStatusEnum | null,
      to: t.toStatus as JobStatusEnum,
      at: t.at,
    });
  }
}

@ObjectType('JobLogLine')
export class JobLogLineType {
  @Field(() => LogStreamEnum)
  stream!: LogStreamEnum;

  @Field(() => String)
  line!: string;

  static from(l: LogLine): JobLogLineType {
    return Object.assign(new JobLogLineType(), { stream: l.stream as LogStreamEnum, line: l.line });
  }
}

@ObjectType('JobCost', {
  description: "A job's cost from the price list: machine price x machine count x run time.",
})
export class JobCostType {
  @Field(() => String, { description: 'Decimal string, two digits past the minor unit (USD: `0.0123`).' })
  amount!: string;

  @Field(() => String)
  currency!: string;

  @Field(() => Boolean, { description: 'False while the job may still run: the cost so far.' })
  final!: boolean;
}

@ObjectType('Job', { description: 'The state of a deployment on an executor, with what it produced.' })
export class JobType {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  deploymentId!: string;

  @Field(() => ID)
  modelId!: string;

  @Field(() => ID, {
    nullable: true,
    description: 'The model version it runs (null only for jobs made before versions existed).',
  })
  modelVersionId!: string | null;

  @Field(() => [String], { description: "The names of the owner's secrets it gets; never their values." })
  secrets!: string[];

  @Field(() => JobStatusEnum)
  status!: JobStatusEnum;

  @Field(() => String, { description: 'The executor that runs it: local, slurm, kubernetes.' })
  executor!: string;

  @Field(() => String, { nullable: true, description: "The executor's handle (process id, Slurm job id)." })
  externalId!: string | null;

  @Field(() => [String], {
    description: 'Where it runs or ran: host names, or Slurm host lists such as gpu[01-04].',
  })
  nodes!: string[];

  @Field(() => String, {
    nullable: true,
    description:
      "Why it waits: while QUEUED, the quota that holds it (QuotaExceeded: 4 of 4 gpu-a100 in use); while STARTING on a cluster, in the cluster's words (Resources, Priority).",
  })
  pendingReason!: string | null;

  @Field(() => PriorityEnum)
  priority!: PriorityEnum;

  @Field(() => Int, {
    nullable: true,
    description:
      "A queued job's place in its owner's queue (1: the owner's next job; across owners, fair share decides). Null when not queued, or in a list when more than 1,000 jobs are ahead.",
  })
  queuePosition!: number | null;

  @Field(() => [String], { description: 'The argv it runs (no shell is involved).' })
  command!: string[];

  @Field(() => String)
  container!: string;

  @Field(() => String)
  machineType!: string;

  @Field(() => Int)
  machineCount!: number;

  @Field(() => Int)
  timeoutSeconds!: number;

  @Field(() => Int, { description: 'Automatic retries after infrastructure failures (from the model).' })
  maxRetries!: number;

  @Field(() => Int, {
    description: '1, plus the automatic retries before this job; a manual retry starts at 1.',
  })
  attempt!: number;

  @Field(() => ID, { nullable: true, description: 'The job this one retries (manually or automatically).' })
  retryOfId!: string | null;

  @Field(() => Boolean, {
    description:
      'It failed because of the infrastructure (worker lost, node failure, preemption), not the program.',
  })
  infrastructureFailure!: boolean;

  @Field(() => Date, { nullable: true, description: 'Cancel-After: canceled if it has not ended by then.' })
  deadlineAt!: Date | null;

  @Field(() => Int, { nullable: true })
  exitCode!: number | null;

  @Field(() => String, { nullable: true, description: 'Why it failed.' })
  error!: string | null;

  @Field(() => String, { description: 'The last 64 KiB it printed.' })
  logTail!: string;

  @Field(() => Float, { nullable: true, description: 'Seconds from creation to start.' })
  queueSeconds!: number | null;

  @Field(() => Float, { nullable: true, description: 'Seconds from start to end.' })
  runSeconds!: number | null;

  @Field(() => GraphQLJSON, { nullable: true, description: 'The JSON the program printed as its last line.' })
  result!: unknown;

  @Field(() => [String], { description: 'URLs of the files it wrote, the first one being the target asset.' })
  resultUrls!: string[];

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date, { nullable: true })
  startedAt!: Date | null;

  @Field(() => Date, { nullable: true })
  finishedAt!: Date | null;

  @Field(() => Date)
  updatedAt!: Date;

  /** The view of a job for clients; `baseUrl` is the CDN root result URLs hang off. */
  static from(baseUrl: string) {
    return (job: Job, status: Job['status'] = job.status): JobType =>
      ({
        id: job.id,
        deploymentId: job.deployment.id,
        modelId: job.modelId,
        modelVersionId: job.modelVersionId,
        secrets: job.secrets,
        status: status as JobStatusEnum,
        executor: job.executor,
        externalId: job.externalId,
        nodes: job.nodes,
        pendingReason: job.pendingReason,
        priority: priorityOfRank(job.priorityRank) as PriorityEnum,
        queuePosition: null,
        command: job.argv,
        container: job.container,
        machineType: job.machineType,
        machineCount: job.machineCount,
        timeoutSeconds: job.timeoutSeconds,
        maxRetries: job.maxRetries,
        attempt: job.attempt,
        retryOfId: job.retryOf,
        infrastructureFailure: job.infrastructureFailure,
        deadlineAt: job.deadlineAt,
        exitCode: job.exitCode,
        error: job.error,
        logTail: job.logTail,
        queueSeconds: job.queueSeconds,
        runSeconds: job.runSeconds,
        result: job.output?.result ?? null,
        resultUrls: (job.output?.files ?? []).map((f) => baseUrl + f.mediaKey),
        createdAt: job.createdAt,
        startedAt: job.startedAt,
        finishedAt: job.finishedAt,
        updatedAt: job.updatedAt,
      }) satisfies JobType;
  }

  static fromUpdate(baseUrl: string) {
    const view = JobType.from(baseUrl);
    return (u: JobUpdate): JobType => view(u.job, u.status);
  }
}

/**
 * The keys of an event's job payload (JobSnapshot) each JobType field is made of, so that a
 * subscription whose fields are all there is answered without reading the job. Nested types
 * need only the ids their resolvers load by; a field not listed here means "read the job".
 */
const FIELD_SOURCES: Record<string, readonly string[]> = {
  __typename: [],
  id: ['id'],
  deploymentId: ['deploymentId'],
  modelId: ['modelId'],
  status: [],
  executor: ['executor'],
  externalId: ['externalId'],
  nodes: ['nodes'],
  // pendingReason and queuePosition are not here: they change between transitions, so they are read.
  priority: ['priorityRank'],
  command: ['argv'],
  container: ['container'],
  machineType: ['machineType'],
  machineCount: ['machineCount'],
  timeoutSeconds: ['timeoutSeconds'],
  exitCode: ['exitCode'],
  error: ['error'],
  queueSeconds: ['queueSeconds'],
  runSeconds: ['runSeconds'],
  cost: ['machineType', 'machineCount', 'runSeconds', 'startedAt', 'finishedAt'],
  result: ['output'],
  resultUrls: ['output'],
  createdAt: ['createdAt'],
  startedAt: ['startedAt'],
  finishedAt: ['finishedAt'],
  updatedAt: ['updatedAt'],
  model: ['modelId'],
  deployment: ['deploymentId'],
  outputs: ['id'],
  transitions: ['id'],
};

/** What the given JobType fields are made of (see FIELD_SOURCES); null when one is unknown. */
export function jobNeedsOf(fields: Iterable<string>): Set<string> | null {
  const needs = new Set<string>();
  for (const field of fields) {
    if (!Object.hasOwn(FIELD_SOURCES, field)) return null;
    for (const key of FIELD_SOURCES[field]) needs.add(key);
  }
  return needs;
}

/** The Job entity's properties the given JobType fields are made of; null for all of them. */
export function jobPropsOf(fields: Iterable<string>): string[] | null {
  const needs = jobNeedsOf(fields);
  // The events' snapshot names the deployment by its id; the entity holds it as a relation.
  return needs && [...needs].map((key) => (key === 'deploymentId' ? 'deployment' : key));
}

export const JobConnection = Connection(JobType, 'Job');

@InputType()
export class JobFilterInput {
  @Field(() => JobStatusEnum, { nullable: true })
  status?: JobStatusEnum | null;

  @Field(() => ID, { nullable: true })
  modelId?: string | null;
}
