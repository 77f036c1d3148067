import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../common/logger';
import type { Mailer } from '../teams/invite.mail';
import type { ThresholdNotice } from './billing.spend';

/**
 * The worker's task that mails a crossed budget threshold (queued by the statement that ended the
 * job, with SMTP_URL set) to the owner: a user, or every owner of a team who has an address. A
 * failure is thrown, so the queue tries again (bounded where it is queued).
 */
export function budgetMailTask(orm: MikroORM, mailer: Mailer, log: Logger) {
  return async (payload: unknown): Promise<void> => {
    const n = payload as ThresholdNotice;
    const rows: { email: string; team: string | null }[] = await orm.em.fork().execute(
      n.ownerType === 'team'
        ? `select u.email, t.name as team from team_members m join users u on u.id = m.user_id
             join teams t on t.id = m.team_id where m.team_id = ? and m.role = 'owner' and u.email is not null`
        : `select email, null as team from users where id = ? and email is not null`,
      [n.ownerId],
    );
    const whose = rows[0]?.team ? `the team "${rows[0].team}"` : 'your account';
    for (const { email } of rows) {
      try {
        await mailer.send({
          to: email,
          subject: `Budget: ${n.threshold}% of the monthly limit reached`,
          text:
            `${n.spent} ${n.currency} of the monthly budget of ${n.monthlyLimit} ${n.currency} of ${whose} ` +
            `has been spent this month (from ${n.periodStart.slice(0, 10)}): ${n.threshold}% of the limit.\n`,
        });
      } catch (err) {
        log.warn({ err, owner: n.ownerId }, 'budget mail not sent; retried later');
        throw err;
      }
    }
  };
}
