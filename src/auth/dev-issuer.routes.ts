import { randomBytes, timingSafeEqual } from 'node:crypto';
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { errors, type Provider } from 'oidc-provider';
import { AppError, httpStatusOf } from '../common/errors';
import { readCookie } from '../server/http.helpers';
import type { DevAccountService } from './dev-account.service';
import {
  messagePage,
  PAGE_SECURITY_HEADERS,
  signInPage,
  signUpPage,
  type FormPage,
} from './dev-issuer.pages';

/** Double-submit token of the sign-in and sign-up forms (the cookie is SameSite=Strict). */
const CSRF_COOKIE = 'dev_idp_csrf';

function sameToken(a: string | undefined, b: unknown): boolean {
  if (!a || typeof b !== 'string' || a.length !== b.length) return false;
  return timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

/**
 * The development identity provider at /oidc: its sign-in and sign-up pages (the provider's
 * "login" interaction), then oidc-provider itself for every protocol endpoint.
 */
export function devIssuerRoutes(provider: Provider, accounts: DevAccountService, secure: boolean): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '16kb' });
  const mountPath = new URL(provider.issuer).pathname;
  const actionOf = (uid: string) => `${mountPath}/interaction/${encodeURIComponent(uid)}`;

  const send = (res: Response, status: number, body: string) => {
    res.status(status).set(PAGE_SECURITY_HEADERS).type('html').send(body);
  };

  /** A fresh CSRF token per page, bound to this browser by the cookie. */
  const csrfFor = (req: Request, res: Response) => {
    const token = randomBytes(24).toString('base64url');
    res.cookie(CSRF_COOKIE, token, {
      httpOnly: true,
      sameSite: 'strict',
      secure,
      path: `${mountPath}/interaction`,
    });
    return token;
  };

  type Handler = (req: Request, res: Response, uid: string) => Promise<void>;
  /** Resolves the interaction (404 page when it expired) and turns errors into pages. */
  const interaction = (handler: Handler) => async (req: Request, res: Response, next: NextFunction) => {
    try {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name !== 'login') {
        return send(res, 400, messagePage('Unexpected request', 'This sign-in step is not supported.'));
      }
      await handler(req, res, details.uid);
    } catch (err) {
      if (err instanceof errors.SessionNotFound) {
        return send(
          res,
          400,
          messagePage(
            'Sign-in expired',
            'This sign-in request is unknown or has expired. Go back to the application and sign in again.',
          ),
        );
      }
      next(err);
    }
  };

  const checkCsrf = (req: Request) => {
    if (!sameToken(readCookie(req, CSRF_COOKIE), (req.body as Record<string, unknown>)?.csrf)) {
      throw new AppError(
        'FORBIDDEN',
        'the form expired or was not sent from this page: reload it and try again',
      );
    }
  };

  /** Renders the form again with the error and what was typed (never the password). */
  const formError = (
    req: Request,
    res: Response,
    uid: string,
    err: unknown,
    render: (p: FormPage) => string,
  ) => {
    if (!(err instanceof AppError)) throw err;
    if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
    const b = req.body as Record<string, string | undefined>;
    const page = {
      action: actionOf(uid),
      csrf: csrfFor(req, res),
      error: err.details
        ? Object.entries(err.details)
            .map(([k, v]) => `${k}: ${v}`)
            .join('; ')
        : err.message,
      values: { username: b.username, email: b.email, name: b.name },
    };
    send(res, httpStatusOf(err.code), render(page));
  };

  const field = (req: Request, name: string) => {
    const v = (req.body as Record<string, unknown>)?.[name];
    return typeof v === 'string' ? v : '';
  };

  router.get(
    '/interaction/:uid',
    interaction(async (req, res, uid) => {
      const page = { action: actionOf(uid), csrf: csrfFor(req, res) };
      send(res, 200, req.query.view === 'sign-up' ? signUpPage(page) : signInPage(page));
    }),
  );

  router.post(
    '/interaction/:uid/sign-in',
    form,
    interaction(async (req, res, uid) => {
      let username: string;
      try {
        checkCsrf(req);
        ({ username } = await accounts.signIn({
          username: field(req, 'username'),
          password: field(req, 'password'),
        }));
      } catch (err) {
        return formError(req, res, uid, err, signInPage);
      }
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: username } },
        { mergeWithLastSubmission: false },
      );
    }),
  );

  router.post(
    '/interaction/:uid/sign-up',
    form,
    interaction(async (req, res, uid) => {
      let username: string;
      try {
        checkCsrf(req);
        ({ username } = await accounts.signUp({
          username: field(req, 'username'),
          password: field(req, 'password'),
          email: field(req, 'email'),
          name: field(req, 'name'),
        }));
      } catch (err) {
        return formError(req, res, uid, err, signUpPage);
      }
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: username } },
        { mergeWithLastSubmission: false },
      );
    }),
  );

  router.post(
    '/interaction/:uid/cancel',
    form,
    interaction(async (req, res, uid) => {
      try {
        checkCsrf(req);
      } catch (err) {
        return formError(req, res, uid, err, signInPage);
      }
      await provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'the user cancelled the sign-in' },
        { mergeWithLastSubmission: false },
      );
    }),
  );

  router.use(provider.callback());
  return router;
}
