import { useEffect, useState } from 'react';
import { gql, messageOf } from '../api/graphql';
import { setActingScope } from '../api/session';
import {
  AcceptTeamInviteDocument,
  DeclineTeamInviteDocument,
  InviteByTokenDocument,
  type InviteRowFragment,
} from '../generated/graphql';
import { Link, navigate, useQuery } from '../router';
import { ErrorNote, Loading } from '../ui/common';

const AS_USER = { scope: null };

/**
 * The invitation link's page (`/invites/accept?token=...`). The app has signed the person in
 * already (through the login flow, back here); it shows the team, the role and who invited them.
 */
export function AcceptInvitePage({ onJoined }: { onJoined: () => void }) {
  const token = useQuery().get('token') ?? '';
  const [invite, setInvite] = useState<InviteRowFragment | null>(null);
  const [error, setError] = useState('');
  const [declined, setDeclined] = useState(false);
  useEffect(() => {
    gql(InviteByTokenDocument, { token }, AS_USER)
      .then((r) => setInvite(r.inviteByToken))
      .catch((err) => setError(messageOf(err)));
  }, [token]);

  const accept = async () => {
    try {
      await gql(AcceptTeamInviteDocument, { token }, AS_USER);
      // Act for the team at once: its jobs are what the person came for.
      setActingScope(invite!.teamId);
      onJoined();
      navigate('/', true);
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const decline = async () => {
    try {
      await gql(DeclineTeamInviteDocument, { token }, AS_USER);
      setDeclined(true);
    } catch (err) {
      setError(messageOf(err));
    }
  };

  if (declined)
    return (
      <section>
        <h1>Invitation declined</h1>
        <p>
          <Link href="/">Back to your jobs</Link>
        </p>
      </section>
    );
  if (!invite)
    return error ? (
      <section>
        <h1>This invitation cannot be used</h1>
        <ErrorNote>{error}</ErrorNote>
        <p>It may have been used, revoked or expired: ask for a new one.</p>
      </section>
    ) : (
      <Loading what="the invitation" />
    );
  return (
    <section>
      <h1>Join team {invite.teamName}</h1>
      <p>
        {invite.invitedByUsername} invites you to the team <strong>{invite.teamName}</strong> as{' '}
        <strong>{invite.role.toLowerCase()}</strong>.
      </p>
      <ErrorNote>{error}</ErrorNote>
      <p>
        <button type="button" className="primary" onClick={() => void accept()}>
          Accept
        </button>{' '}
        <button type="button" onClick={() => void decline()}>
          Decline
        </button>
      </p>
    </section>
  );
}
