import { Router, type CookieOptions, type Request } from 'express';
import type { ApiDoc } from '../http/openapi/openapi.docs';
import { integer, nullable, object, requestBody, string, url, uuid } from '../http/openapi/json-schema';
import { AppError } from '../common/errors';
import type { Config } from '../config';
import { readCookie, sendJson } from '../http/http.helpers';
import type { Authenticator } from './authenticator';
import { LOGIN_VERSIONS, type LoginService, type LoginTokens } from './login.service';
import { LOGIN_ATTEMPT_TTL_MS } from './session.service';

export const SESSION_COOKIE = 'auth_session';
/** Ties a browser-started login to the browser that finishes it (see LoginService.start). */
const BINDING_COOKIE = 'auth_login';

const tokensJson = (t: LoginTokens) => ({
  access_token: t.accessToken,
  refresh_token: t.refreshToken,
  id_token: t.idToken,
  token_type: 'Bearer',
});

const tokensSchema = object({
  access_token: string,
  refresh_token: string,
  id_token: string,
  token_type: { type: 'string', const: 'Bearer' },
});

/** The login flow's paths, for the OpenAPI document. */
export const loginDocs: ApiDoc[] = [
  ...LOGIN_VERSIONS.flatMap((version): ApiDoc[] => [
    {
      method: 'get',
      path: `/api/${version}/auth/login`,
      operationId: `Login${version.toUpperCase()}`,
      summary: 'Start a login: a browser (Accept: text/html) is redirected, an API client gets the URL',
      security: 'none',
      query: { return_to: { description: 'a path of this service where a browser lands afterwards' } },
      response: object({ login_url: url }),
      responses: { 302: { description: "to the identity provider's sign-in page" } },
    },
    {
      method: 'get',
      path: `/api/${version}/auth/callback`,
      operationId: `LoginCallback${version.toUpperCase()}`,
      summary:
        'Where the identity provider returns: sets the `auth_session` cookie; answers the tokens (a browser is redirected)',
      security: 'none',
      query: {
        code: { description: "the identity provider's authorization code" },
        state: { description: 'the login attempt' },
      },
      response: tokensSchema,
      responses: { 303: { description: 'a browser: to `return_to` (or `/`), signed in by the cookie' } },
    },
  ]),
  {
    method: 'post',
    path: '/api/v1/auth/refresh',
    operationId: 'RefreshLogin',
    summary: 'New tokens for a refresh token',
    security: 'none',
    request: requestBody({ refresh_token: string }, ['refresh_token']),
    response: tokensSchema,
  },
  {
    method: 'post',
    path: '/api/v1/auth/token',
    operationId: 'SessionToken',
    summary:
      "The web app's access token from its session cookie (same-origin pages only: send X-Requested-With)",
    security: 'session',
    request: requestBody({ team_id: uuid }),
    response: object({
      access_token: string,
      token_type: { type: 'string', const: 'Bearer' },
      expires_in: integer,
      team_id: nullable(uuid),
    }),
  },
  {
    method: 'post',
    path: '/api/v1/auth/logout',
    operationId: 'Logout',
    summary: 'End the login session (its cookie, or the session of a refresh token)',
    security: 'none',
    request: requestBody({ refresh_token: string }),
    status: 204,
  },
];
const prefersHtml = (req: Request) => req.accepts(['application/json', 'text/html']) === 'text/html';

/**
 * Only the web app's own pages may turn the session cookie into a token: a request from another
 * site (fetch metadata, Origin) or without the custom header that no form or simple request can
 * send is refused before the cookie is even read.
 */
function refuseCrossSite(req: Request, publicUrl: string): void {
  const site = req.get('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin')
    throw new AppError('FORBIDDEN', 'session tokens are only given to pages of this service');
  const origin = req.get('origin');
  const sameHost = () => URL.canParse(origin!) && new URL(origin!).host === req.get('host');
  if (origin !== undefined && origin !== new URL(publicUrl).origin && !sameHost())
    throw new AppError('FORBIDDEN', 'session tokens are only given to pages of this service');
  if (!req.get('x-requested-with'))
    throw new AppError('FORBIDDEN', 'send the X-Requested-With header (the web app does)');
}

/** A JSON body's field, when there is a JSON object body. */
const bodyField = (req: Request, name: string): unknown =>
  req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>)[name] : undefined;

/**
 * The login flow's endpoints: redirects and cookies, so plain Express handlers calling the login
 * service (like byte-stream routes), not GraphQL operations. `fetch-metadata` only turns the
 * session cookie into the request's principal; the REST-compat route then answers it from `me`.
 */
export function loginRoutes(
  config: Config,
  { login, authenticator }: { login: LoginService; authenticator: Authenticator },
): Router {
  const router = Router();
  const cookie = (path = '/'): CookieOptions => ({
    httpOnly: true,
    sameSite: 'lax',
    secure: config.publicUrl.startsWith('https:'),
    path,
  });

  for (const version of LOGIN_VERSIONS) {
    const callbackPath = `/api/${version}/auth/callback`;

    router.get(`/api/${version}/auth/login`, async (req, res) => {
      const browser = prefersHtml(req);
      const { loginUrl, binding } = await login.start({ version, browser, returnTo: req.query.return_to });
      if (!binding) return sendJson(req, res, 200, { login_url: loginUrl });
      res.cookie(BINDING_COOKIE, binding, { ...cookie(callbackPath), maxAge: LOGIN_ATTEMPT_TTL_MS });
      res.redirect(302, loginUrl);
    });

    router.get(callbackPath, async (req, res) => {
      res.clearCookie(BINDING_COOKIE, cookie(callbackPath));
      const { tokens, sessionCookie, returnTo } = await login.callback({
        version,
        query: req.query as Record<string, unknown>,
        binding: readCookie(req, BINDING_COOKIE),
      });
      res.cookie(SESSION_COOKIE, sessionCookie, { ...cookie(), maxAge: config.sessionTtlSeconds * 1000 });
      res.setHeader('Cache-Control', 'no-store');
      // A person lands in the web app (signed in by the cookie); an API client gets the tokens.
      if (prefersHtml(req)) return res.redirect(303, returnTo ?? '/');
      sendJson(req, res, 200, tokensJson(tokens));
    });
  }

  router.post('/api/v1/auth/refresh', async (req, res) => {
    const tokens = await login.refresh({ refreshToken: bodyField(req, 'refresh_token') });
    res.setHeader('Cache-Control', 'no-store');
    sendJson(req, res, 200, tokensJson(tokens));
  });

  // The web app's access token, from its session cookie (docs/web-app.md says why this is safe).
  router.post('/api/v1/auth/token', async (req, res) => {
    refuseCrossSite(req, config.publicUrl);
    const token = await login.sessionToken({
      cookie: readCookie(req, SESSION_COOKIE),
      teamId: bodyField(req, 'team_id'),
    });
    res.setHeader('Cache-Control', 'no-store');
    sendJson(req, res, 200, {
      access_token: token.accessToken,
      token_type: 'Bearer',
      expires_in: Math.max(0, Math.floor((token.expiresAt.getTime() - Date.now()) / 1000)),
      team_id: token.teamId,
    });
  });

  router.post('/api/v1/auth/logout', async (req, res) => {
    await login.logout({
      cookie: readCookie(req, SESSION_COOKIE),
      refreshToken: bodyField(req, 'refresh_token'),
    });
    res.clearCookie(SESSION_COOKIE, cookie());
    res.status(204).end();
  });

  // Express 5 passes a rejected promise (401 without a live session) to the error handler.
  router.get('/api/v1/fetch-metadata', async (req, res, next) => {
    res.locals.principal = await authenticator.authenticateSession(readCookie(req, SESSION_COOKIE));
    next();
  });

  return router;
}
