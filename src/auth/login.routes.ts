import { Router, type CookieOptions, type Request } from 'express';
import type { ApiDoc } from '../../rest-compat/route';
import { object, requestBody, string, url } from '../../rest-compat/schemas';
import type { Config } from '../config';
import { readCookie, sendJson } from '../server/http.helpers';
import type { Services } from '../server/services';
import { LOGIN_VERSIONS, type LoginTokens } from './login.service';
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
      response: object({ login_url: url }),
      responses: { 302: { description: "to the identity provider's sign-in page" } },
    },
    {
      method: 'get',
      path: `/api/${version}/auth/callback`,
      operationId: `LoginCallback${version.toUpperCase()}`,
      summary: 'Where the identity provider returns: answers the tokens and sets the `auth_session` cookie',
      security: 'none',
      query: {
        code: { description: "the identity provider's authorization code" },
        state: { description: 'the login attempt' },
      },
      response: tokensSchema,
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
    path: '/api/v1/auth/logout',
    operationId: 'Logout',
    summary: 'End the login session (its cookie, or the session of a refresh token)',
    security: 'none',
    request: requestBody({ refresh_token: string }),
    status: 204,
  },
];

/** A JSON body's field, when there is a JSON object body. */
const bodyField = (req: Request, name: string): unknown =>
  req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>)[name] : undefined;

/**
 * The login flow's endpoints: redirects and cookies, so plain Express handlers calling the login
 * service (like byte-stream routes), not GraphQL operations. `fetch-metadata` only turns the
 * session cookie into the request's principal; the REST-compat route then answers it from `me`.
 */
export function loginRoutes(config: Config, { login, authenticator }: Services): Router {
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
      const browser = req.accepts(['application/json', 'text/html']) === 'text/html';
      const { loginUrl, binding } = await login.start({ version, browser });
      if (!binding) return sendJson(req, res, 200, { login_url: loginUrl });
      res.cookie(BINDING_COOKIE, binding, { ...cookie(callbackPath), maxAge: LOGIN_ATTEMPT_TTL_MS });
      res.redirect(302, loginUrl);
    });

    router.get(callbackPath, async (req, res) => {
      res.clearCookie(BINDING_COOKIE, cookie(callbackPath));
      const { tokens, sessionCookie } = await login.callback({
        version,
        query: req.query as Record<string, unknown>,
        binding: readCookie(req, BINDING_COOKIE),
      });
      res.cookie(SESSION_COOKIE, sessionCookie, { ...cookie(), maxAge: config.sessionTtlSeconds * 1000 });
      res.setHeader('Cache-Control', 'no-store');
      sendJson(req, res, 200, tokensJson(tokens));
    });
  }

  router.post('/api/v1/auth/refresh', async (req, res) => {
    const tokens = await login.refresh({ refreshToken: bodyField(req, 'refresh_token') });
    res.setHeader('Cache-Control', 'no-store');
    sendJson(req, res, 200, tokensJson(tokens));
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
