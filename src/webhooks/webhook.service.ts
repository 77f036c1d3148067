import type { MikroORM } from '@mikro-orm/postgresql';
import { assertOwned, ownerOf, type Owner, type Principal } from '../auth/principal';
import type { AuditLog } from '../teams/audit.service';
import { authorize } from '../teams/team.roles';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import { findPage, type Page, type PageArgs } from '../common/pagination';
import { Job } from '../jobs/job.entity';
import { assertReachable, parseWebhookUrl, type AddressPolicy } from './webhook.address';
import { WebhookAttempt, WebhookDelivery, WebhookSecret } from './webhook.entity';
import { DEFAULT_WEBHOOK_EVENTS, WEBHOOK_EVENTS, type WebhookEvent } from './webhook.events';
import { newSecret } from './webhook.signature';

/** How long the previous secret keeps signing after a rotation. */
export const PREVIOUS_SECRET_MS = 24 * 3600_000;

const MESSAGE_ID = /^msg_[0-9a-f]{32}$/;

export interface WebhookInput {
  webhook?: string | null;
  webhookEventsFilter?: readonly string[] | null;
}

/** Deployments' webhooks as clients see them: their settings, signing secrets, and the record of deliveries. */
export class WebhookService {
  constructor(
    private readonly orm: MikroORM,
    /** Which webhook addresses may be reached (WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE). */
    readonly policy: AddressPolicy,
    /** Rotations for a team leave audit records (none in scripts). */
    private readonly audit: AuditLog | null = null,
  ) {}

  /**
   * A deployment's webhook and event filter as given: an https URL (http with WEBHOOK_ALLOW_HTTP)
   * whose host is not, and does not resolve to, a private address; the filter defaults to
   * `completed` and needs a webhook.
   */
  async check(input: WebhookInput): Promise<{ webhook: string | null; events: WebhookEvent[] }> {
    const filter = input.webhookEventsFilter ?? null;
    if (!input.webhook) {
      if (filter?.length) throw AppError.validation({ webhookEventsFilter: 'needs a webhook' });
      return { webhook: null, events: [] };
    }
    const url = parseWebhookUrl(input.webhook.trim(), this.policy);
    await assertReachable(url, this.policy);
    const unknown = (filter ?? []).filter((e) => !(WEBHOOK_EVENTS as readonly string[]).includes(e));
    if (unknown.length)
      throw AppError.validation({
        webhookEventsFilter: `unknown event ${unknown[0]}; use ${WEBHOOK_EVENTS.join(', ')}`,
      });
    // In the order events happen, each once.
    const events = filter?.length
      ? WEBHOOK_EVENTS.filter((e) => filter.includes(e))
      : [...DEFAULT_WEBHOOK_EVENTS];
    return { webhook: url.toString(), events };
  }

  /** The owner's signing secret, created on first use. */
  async secret(principal: Principal): Promise<WebhookSecret> {
    authorize(principal, 'manage', "read the team's webhook secret");
    return this.secretOf(ownerOf(principal));
  }

  /**
   * A new signing secret for the owner. The previous one still signs (a second signature) for
   * 24 hours, so receivers can move to the new one without losing messages.
   */
  async rotate(principal: Principal): Promise<WebhookSecret> {
    authorize(principal, 'manage', "rotate the team's webhook secret");
    const owner = ownerOf(principal);
    await this.secretOf(owner);
    const [row] = await this.orm.em.fork().transactional(async (em) => {
      const rows: Record<string, unknown>[] = await em.execute(
        `update webhook_secrets set previous_key = key, key = ?, rotated_at = now()
         where owner_type = ? and owner_id = ? returning *`,
        [newSecret(), owner.type, owner.id],
      );
      this.audit?.recordForTeam(em, principal, {
        action: 'webhook_secret.rotated',
        targetType: 'team',
        targetId: owner.id,
      });
      return rows;
    });
    return this.orm.em.fork().map(WebhookSecret, row);
  }

  /** The secrets that sign the owner's messages now: the current one, and the previous one for a day after a rotation. */
  async signingSecrets(owner: Owner): Promise<string[]> {
    const s = await this.secretOf(owner);
    const recent = s.previousKey && s.rotatedAt && Date.now() - s.rotatedAt.getTime() < PREVIOUS_SECRET_MS;
    return recent ? [s.key, s.previousKey!] : [s.key];
  }

  /** The messages of one of the principal's jobs, newest first; another owner's job is NOT_FOUND. */
  async deliveries(principal: Principal, jobId: string, args: PageArgs): Promise<Page<WebhookDelivery>> {
    const em = this.orm.em.fork();
    const job = isUuid(jobId)
      ? await em.findOne(Job, { id: jobId.toLowerCase() }, { fields: ['id', 'ownerType', 'ownerId'] })
      : null;
    assertOwned(job, principal, 'job');
    return findPage(em, WebhookDelivery, { job: job!.id }, args, {
      isId: (id) => typeof id === 'string' && MESSAGE_ID.test(id),
    });
  }

  /** The attempts of messages, in order (for DataLoaders). */
  async attemptsOf(deliveryIds: readonly string[]): Promise<WebhookAttempt[]> {
    return this.orm.em
      .fork()
      .find(WebhookAttempt, { delivery: { $in: [...deliveryIds] } }, { orderBy: { attempt: 'asc' } });
  }

  private async secretOf(owner: Owner): Promise<WebhookSecret> {
    const em = this.orm.em.fork();
    const existing = await em.findOne(WebhookSecret, { ownerType: owner.type, ownerId: owner.id });
    if (existing) return existing;
    // Concurrent first uses create one secret: the loser of the insert reads the winner's.
    await em.execute(
      `insert into webhook_secrets (id, owner_type, owner_id, key, created_at)
       values (gen_random_uuid(), ?, ?, ?, now()) on conflict (owner_type, owner_id) do nothing`,
      [owner.type, owner.id, newSecret()],
    );
    return em.findOneOrFail(WebhookSecret, { ownerType: owner.type, ownerId: owner.id });
  }
}
