import { useCallback, useEffect, useState, useSyncExternalStore } from 'react';
import { gql, messageOf } from './api/graphql';
import { liveState, onLiveState, startLive } from './api/live';
import { actingScope, onScopeChange, signIn, signOut } from './api/session';
import { ViewerDocument, type ViewerQuery } from './generated/graphql';
import { AccountPage } from './pages/Account';
import { BatchesPage, BatchPage } from './pages/Batches';
import { AcceptInvitePage } from './pages/AcceptInvite';
import { JobPage } from './pages/JobPage';
import { JobsPage } from './pages/Jobs';
import { MediaPage } from './pages/Media';
import { ModelsPage } from './pages/Models';
import { RunModelPage } from './pages/RunModel';
import { TeamPage } from './pages/Team';
import { UsagePage } from './pages/Usage';
import { Link, usePath } from './router';
import { ErrorNote, Loading } from './ui/common';
import { WhoAmI } from './ui/WhoAmI';

const NAV = [
  { href: '/', label: 'Jobs', match: (p: string) => p === '/' || p.startsWith('/jobs') },
  { href: '/models', label: 'Run a model', match: (p: string) => p.startsWith('/models') },
  { href: '/files', label: 'Media', match: (p: string) => p.startsWith('/files') },
  { href: '/batches', label: 'Batches', match: (p: string) => p.startsWith('/batches') },
  { href: '/usage', label: 'Usage', match: (p: string) => p.startsWith('/usage') },
  {
    href: '/account',
    label: 'Account',
    match: (p: string) => p.startsWith('/account') || p.startsWith('/teams') || p.startsWith('/invites'),
  },
];

function Page({
  path,
  viewer,
  reloadViewer,
}: {
  path: string;
  viewer: ViewerQuery;
  reloadViewer: () => void;
}) {
  const job = /^\/jobs\/([\w-]+)$/.exec(path);
  const model = /^\/models\/([\w-]+)$/.exec(path);
  const team = /^\/teams\/([\w-]+)$/.exec(path);
  const batch = /^\/batches\/([\w-]+)$/.exec(path);
  if (path === '/' || path === '/jobs') return <JobsPage />;
  if (job) return <JobPage id={job[1]} />;
  if (path === '/models') return <ModelsPage />;
  if (model) return <RunModelPage id={model[1]} />;
  if (path === '/files') return <MediaPage />;
  if (path === '/batches') return <BatchesPage />;
  if (batch) return <BatchPage id={batch[1]} />;
  if (path === '/usage') return <UsagePage />;
  if (path === '/account') return <AccountPage viewer={viewer} onTeamsChanged={reloadViewer} />;
  if (team) return <TeamPage id={team[1]} />;
  if (path === '/invites/accept') return <AcceptInvitePage onJoined={reloadViewer} />;
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        Nothing lives at {path}. <Link href="/">Back to your jobs</Link>.
      </p>
    </section>
  );
}

function LiveIndicator() {
  const state = useSyncExternalStore(onLiveState, liveState);
  const text = state === 'live' ? 'Live' : state === 'reconnecting' ? 'Reconnecting…' : 'Connecting…';
  return (
    <span className={`live live-${state}`} role="status" aria-live="polite" data-live={state}>
      {text}
    </span>
  );
}

export function App() {
  const path = usePath();
  const scope = useSyncExternalStore(onScopeChange, actingScope);
  const [viewer, setViewer] = useState<ViewerQuery | null>(null);
  const [error, setError] = useState('');

  const loadViewer = useCallback(async () => {
    try {
      setViewer(await gql(ViewerDocument));
    } catch (err) {
      setError(messageOf(err));
    }
  }, []);

  useEffect(() => {
    if (path === '/signed-out') return;
    startLive();
    void loadViewer();
  }, [scope, loadViewer]);

  useEffect(() => {
    const title = NAV.find((n) => n.match(path))?.label ?? 'Media platform';
    document.title = `${title} · Media platform`;
  }, [path]);

  if (path === '/signed-out')
    return (
      <main className="signed-out">
        <h1>You have signed out</h1>
        <p>Your session on this service has ended.</p>
        <button type="button" className="primary" onClick={() => signIn()}>
          Sign in again
        </button>
      </main>
    );

  const team = viewer?.teams.nodes.find((t) => t.id === scope);
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <Link className="brand" href="/">
          Media platform
        </Link>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.href}>
                <Link href={n.href} aria-current={n.match(path) ? 'page' : undefined}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          {viewer ? <WhoAmI viewer={viewer} /> : null}
          <LiveIndicator />
          <button type="button" onClick={() => void signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {team ? (
          <p className="acting-banner">
            Acting as team {team.name}: you see and create the team's resources.
          </p>
        ) : null}
        <ErrorNote>{error}</ErrorNote>
        {viewer ? (
          <Page key={scope ?? 'me'} path={path} viewer={viewer} reloadViewer={() => void loadViewer()} />
        ) : (
          <Loading what="your account" />
        )}
      </main>
    </>
  );
}
