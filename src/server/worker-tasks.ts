import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { GraphQLSchema } from 'graphql';
import { restJobRenderer } from '../../rest-compat/job.renderer';
import type { Logger } from '../common/logger';
import type { Config } from '../config';
import { DEADLINE_TASK } from '../jobs/job.queue';
import type { TaskList } from '../tasks/task.runner';
import { WebhookDeliverer } from '../webhooks/webhook.deliverer';
import { Loaders } from '../graphql/graphql.loaders';
import { inviteMailTask, smtpMailer } from '../teams/invite.mail';
import { INVITE_MAIL_TASK } from '../teams/team.invites';
import type { Services } from './services';
import { budgetMailTask } from '../billing/budget.mail';
import { BUDGET_MAIL_TASK } from '../billing/billing.spend';

/** The worker role's short tasks by name (src/tasks/task.runner.ts): webhook attempts, job deadlines, invitation mails. */
export function workerTasks(
  config: Config,
  orm: MikroORM,
  schema: GraphQLSchema,
  services: Services,
  log: Logger,
): TaskList {
  // Messages carry the job as its REST route shows it, rendered as its owner would read it.
  const render = restJobRenderer(schema, (principal) => ({
    requestId: randomUUID(),
    principal,
    log,
    loaders: new Loaders(),
    live: services.live,
  }));
  const deliverer = new WebhookDeliverer(
    orm,
    services.webhooks,
    render,
    (jobId) => services.jobs.recentLogTail(jobId),
    log,
    { timeoutMs: config.webhookTimeoutSeconds * 1000, policy: services.webhooks.policy },
  );
  const mailTasks = (smtpUrl: string, from: string) => {
    const mailer = smtpMailer(smtpUrl, from);
    return {
      [INVITE_MAIL_TASK]: inviteMailTask(services.invites, mailer, log),
      [BUDGET_MAIL_TASK]: budgetMailTask(orm, mailer, log),
    };
  };
  return {
    [DEADLINE_TASK]: (p) => services.jobs.cancelAtDeadline((p as { jobId: string }).jobId),
    ...deliverer.tasks(),
    ...(config.smtpUrl ? mailTasks(config.smtpUrl, config.mailFrom) : {}),
  };
}
