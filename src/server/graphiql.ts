import path from 'node:path';
import { Router } from 'express';

const asset = (pkg: string, file: string) =>
  path.join(path.dirname(require.resolve(`${pkg}/package.json`)), file);

const page = (endpoint: string) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>GraphiQL: media platform</title>
  <link rel="stylesheet" href="/graphql-ide/graphiql.min.css" />
  <style>body { margin: 0; height: 100vh; } #graphiql { height: 100vh; }</style>
</head>
<body>
  <div id="graphiql">Loading the GraphQL IDE...</div>
  <script src="/graphql-ide/react.production.min.js"></script>
  <script src="/graphql-ide/react-dom.production.min.js"></script>
  <script src="/graphql-ide/graphiql.min.js"></script>
  <script>
    // Subscriptions go over graphql-ws on the same path; the fetcher passes the headers pane's
    // values (Authorization or the API key header) as the socket's connectionParams.
    const endpoint = new URL(${JSON.stringify(endpoint)}, location.href);
    const fetcher = GraphiQL.createFetcher({
      url: endpoint.href,
      subscriptionUrl: endpoint.href.replace(/^http/, 'ws'),
    });
    ReactDOM.createRoot(document.getElementById('graphiql')).render(
      React.createElement(GraphiQL, { fetcher, defaultEditorToolsVisibility: true, headerEditorEnabled: true,
        defaultHeaders: '{\\n  "Authorization": "Bearer <token from npm run token -- <username>>"\\n}' }),
    );
  </script>
</body>
</html>`;

/** GraphiQL served from local packages: the machines this runs on may have no CDN access. */
export function graphiqlRoutes(): Router {
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
    res.type('html').send(page('/graphql'));
  });
  router.get('/graphql-ide/:file', (req, res, next) => {
    const file = files[req.params.file];
    if (!file) return next();
    res.sendFile(file, { maxAge: '1d' });
  });
  return router;
}
