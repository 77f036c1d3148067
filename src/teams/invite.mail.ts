import nodemailer from 'nodemailer';
import type { Logger } from '../common/logger';
import type { TeamService } from './team.service';

/** Sends one mail; the only thing the invitations need of a mail server. */
export interface Mailer {
  send(mail: { to: string; subject: string; text: string }): Promise<void>;
}

/** A mailer over SMTP (SMTP_URL: `smtp://user:pass@host:port`, `smtps://` for TLS from the start). */
export function smtpMailer(smtpUrl: string, from: string): Mailer {
  const transport = nodemailer.createTransport(smtpUrl);
  return {
    send: async ({ to, subject, text }) => {
      await transport.sendMail({ from, to, subject, text });
    },
  };
}

/**
 * The worker's task that mails an invitation's link. A failure is recorded on the invitation and
 * thrown, so the queue tries again later (its attempts are bounded where it is queued); the
 * invitation itself never depends on it. One revoked or answered meanwhile is not mailed.
 */
export function inviteMailTask(teams: TeamService, mailer: Mailer, log: Logger) {
  return async (payload: unknown): Promise<void> => {
    const { inviteId, url } = payload as { inviteId: string; url: string };
    const invite = await teams.inviteForMail(inviteId);
    if (!invite?.email || invite.status !== 'pending' || invite.expiresAt.getTime() <= Date.now()) return;
    const inviter = invite.invitedBy.name ?? invite.invitedBy.username;
    try {
      await mailer.send({
        to: invite.email,
        subject: `${inviter} invites you to ${invite.team.name}`,
        text:
          `${inviter} invites you to join the team "${invite.team.name}" as ${invite.role}.\n\n` +
          `Open this link to accept or decline (it works until ${invite.expiresAt.toISOString()}):\n${url}\n`,
      });
    } catch (err) {
      log.warn({ err, inviteId }, 'invitation mail not sent; retried later');
      await teams.noteMail(inviteId, 'failed', (err as Error).message.slice(0, 500));
      throw err;
    }
    await teams.noteMail(inviteId, 'sent', null);
  };
}
