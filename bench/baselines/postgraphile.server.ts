/**
 * The peer: PostGraphile v4 over the same database, as its documentation recommends running it in
 * production (the "For Production" option set of its library usage page), so that the service is
 * measured against what a team would otherwise deploy. It compiles each query to one SQL
 * statement. Used by `npm run bench -- list` alone (a dev dependency).
 *
 * Departures from that option set, none of which touch the query path: no subscriptions (no
 * websocket server is needed), no pg-simplify-inflector (names only), no pgSettings (the bench
 * asks for the owner's rows by condition; the service authenticates every request, PostGraphile
 * here does not even open a transaction, which favours the peer).
 */
import http from 'node:http';
import Module from 'node:module';
import path from 'node:path';

/**
 * PostGraphile v4 needs graphql 15; the service uses 16, so npm nests graphql 15 (and
 * graphile-build, which peers on it) twice: under postgraphile and under graphile-build-pg. Two
 * copies of graphql in one schema fail (`Unexpected input type`), so this process, which runs
 * PostGraphile alone, resolves both names to postgraphile's own copies.
 */
const own = path.dirname(require.resolve('postgraphile/package.json'));
const shared = new Set(['graphql', 'graphile-build']);
const resolve = (Module as unknown as { _resolveFilename: (r: string, ...rest: unknown[]) => string })
  ._resolveFilename;
const ownModule = { paths: [path.join(own, 'node_modules')], filename: path.join(own, 'index.js') };
(Module as unknown as { _resolveFilename: typeof resolve })._resolveFilename = (request, parent, ...rest) =>
  resolve(request, shared.has(request.split('/')[0]) ? ownModule : parent, ...rest);
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { postgraphile } = require('postgraphile') as typeof import('postgraphile');

const middleware = postgraphile(process.env.DATABASE_URL, 'public', {
  retryOnInitFail: true,
  dynamicJson: true,
  setofFunctionsContainNulls: false,
  ignoreRBAC: false,
  extendedErrors: ['errcode'],
  graphiql: false,
  enableQueryBatching: true,
  disableQueryLog: true,
  legacyRelations: 'omit',
});

http
  .createServer((req, res) => {
    if (req.url === '/readyz') return void res.end('{}');
    middleware(req, res);
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
