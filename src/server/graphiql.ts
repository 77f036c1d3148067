import path from 'node:path';
import { Router } from 'express';

const asset = (pkg: string, file: string) =>
  path.join(path.dirname(require.resolve(`${pkg}/package.json`)), file);

const page = (endpoint: string, apiKeyHeader: string) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>GraphiQL: media platform</title>
  <link rel="stylesheet" href="/graphql-ide/graphiql.min.css" />
  <style>
    body { margin: 0; height: 100vh; display: flex; flex-direction: column; font: 14px system-ui, sans-serif; }
    #acting { display: flex; gap: 8px; align-items: center; padding: 6px 12px; border-bottom: 1px solid #ddd; }
    #acting .note { color: #666; }
    #acting .home { margin-left: auto; }
    #graphiql { flex: 1; min-height: 0; }
  </style>
</head>
<body>
  <div id="acting" role="status" aria-live="polite">Checking for a signed-in session…</div>
  <div id="graphiql">Loading the GraphQL IDE...</div>
  <script src="/graphql-ide/react.production.min.js"></script>
  <script src="/graphql-ide/react-dom.production.min.js"></script>
  <script src="/graphql-ide/graphiql.min.js"></script>
  <script>
    // Signed in to the dashboard, the page gets its token as the web app does: a same-origin
    // POST with the session cookie (docs/web-app.md), kept in memory only and renewed. The headers
    // pane wins: an Authorization or API key header there is sent instead (and used as the
    // subscription socket's connectionParams, as the fetcher passes the headers on).
    const endpoint = new URL(${JSON.stringify(endpoint)}, location.href);
    const apiKeyHeader = ${JSON.stringify(apiKeyHeader.toLowerCase())};
    const bar = document.getElementById('acting');
    let team = null;
    let held = null;
    async function sessionToken() {
      if (held && held.expiresAt - Date.now() > 5000 && held.team === team) return held.token;
      const res = await fetch('/api/v1/auth/token', {
        method: 'POST', credentials: 'same-origin', cache: 'no-store',
        headers: { 'content-type': 'application/json', accept: 'application/json', 'x-requested-with': 'fetch' },
        body: JSON.stringify(team ? { team_id: team } : {}),
      });
      if (!res.ok) { held = null; return null; }
      const body = await res.json();
      held = { token: body.access_token, expiresAt: Date.now() + body.expires_in * 1000, team };
      return held.token;
    }
    const base = GraphiQL.createFetcher({
      url: endpoint.href,
      subscriptionUrl: endpoint.href.replace(/^http/, 'ws'),
    });
    const fetcher = async (params, opts) => {
      const headers = { ...(opts && opts.headers) };
      const own = Object.keys(headers).some((h) => ['authorization', apiKeyHeader].includes(h.toLowerCase()));
      if (!own) {
        const token = await sessionToken();
        if (token) headers.Authorization = 'Bearer ' + token;
      }
      return base(params, { ...opts, headers });
    };
    async function showWho() {
      const token = await sessionToken().catch(() => null);
      if (!token) {
        bar.textContent = 'Not signed in: ';
        const a = document.createElement('a');
        a.href = '/api/v1/auth/login?return_to=' + encodeURIComponent(location.pathname);
        a.textContent = 'sign in';
        bar.append(a, ', or put a token in the headers pane.');
        return;
      }
      const res = await fetch(endpoint.href, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer ' + token },
        body: JSON.stringify({ query: '{ me { username } teams(first: 100) { nodes { id name } } }' }),
      });
      const { data } = await res.json();
      const label = document.createElement('label');
      label.htmlFor = 'acting-team';
      label.textContent = 'Acting as ' + data.me.username + ' /';
      const select = document.createElement('select');
      select.id = 'acting-team';
      select.append(new Option('myself', ''));
      for (const t of data.teams.nodes) select.append(new Option('team ' + t.name, t.id));
      select.value = team || '';
      select.onchange = () => { team = select.value || null; held = null; };
      const note = document.createElement('span');
      note.className = 'note';
      note.textContent = 'An Authorization or API key header in the headers pane is sent instead.';
      const home = document.createElement('a');
      home.className = 'home';
      home.href = '/';
      home.textContent = 'Dashboard';
      bar.replaceChildren(label, select, note, home);
    }
    void showWho();
    ReactDOM.createRoot(document.getElementById('graphiql')).render(
      React.createElement(GraphiQL, { fetcher, defaultEditorToolsVisibility: true, headerEditorEnabled: true }),
    );
  </script>
</body>
</html>`;

/** GraphiQL served from local packages: the machines this runs on may have no CDN access. */
export function graphiqlRoutes(apiKeyHeader: string): Router {
  const files: Record<string, string> = {
    'graphiql.min.css': asset('graphiql', 'graphiql.min.css'),
    'graphiql.min.js': asset('graphiql', 'graphiql.min.js'),
    'react.production.min.js': asset('react', 'umd/react.production.min.js'),
    'react-dom.production.min.js': asset('react-dom', 'umd/react-dom.production.min.js'),
  };
  const router = Router();
  router.get('/graphql', (req, res, next) => {
    if (
      req.method !== 'GET' ||
      req.query.query !== undefined ||
      !req.accepts('text/html') ||
      req.accepts(['application/json', 'text/html']) !== 'text/html'
    )
      return next();
    res.type('html').send(page('/graphql', apiKeyHeader));
  });
  router.get('/graphql-ide/:file', (req, res, next) => {
    const file = files[req.params.file];
    if (!file) return next();
    res.sendFile(file, { maxAge: '1d' });
  });
  return router;
}
