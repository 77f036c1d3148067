import { randomBytes, timingSafeEqual } from 'node:crypto';
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { errors, type InteractionResults, type Provider } from 'oidc-provider';
import { AppError, httpStatusOf } from '../common/errors';
import { readCookie } from '../http/http.helpers';
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
  const csrfFor = (res: Response) => {
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
  /** Resolves the interaction (a page saying so when it is unknown or expired), then `handler`. */
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

  const field = (req: Request, name: string) => {
    const v = (req.body as Record<string, unknown>)?.[name];
    return typeof v === 'string' ? v : '';
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
    const page = {
      action: actionOf(uid),
      csrf: csrfFor(res),
      error: err.details
        ? Object.entries(err.details)
            .map(([k, v]) => `${k}: ${v}`)
            .join('; ')
        : err.message,
      values: { username: field(req, 'username'), email: field(req, 'email'), name: field(req, 'name') },
    };
    send(res, httpStatusOf(err.code), render(page));
  };

  router.get(
    '/interaction/:uid',
    interaction(async (req, res, uid) => {
      const page = { action: actionOf(uid), csrf: csrfFor(res) };
      send(res, 200, req.query.view === 'sign-up' ? signUpPage(page) : signInPage(page));
    }),
  );

  /** A form of the sign-in step: CSRF check, then `act`; the provider resumes with its result. */
  const formRoute = (
    name: string,
    render: (p: FormPage) => string,
    act: (req: Request) => Promise<InteractionResults>,
  ) =>
    router.post(
      `/interaction/:uid/${name}`,
      form,
      interaction(async (req, res, uid) => {
        let result: InteractionResults;
        try {
          checkCsrf(req);
          result = await act(req);
        } catch (err) {
          return formError(req, res, uid, err, render);
        }
        await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
      }),
    );

  const signedIn = ({ username }: { username: string }): InteractionResults => ({
    login: { accountId: username },
  });
  formRoute('sign-in', signInPage, async (req) =>
    signedIn(await accounts.signIn({ username: field(req, 'username'), password: field(req, 'password') })),
  );
  formRoute('sign-up', signUpPage, async (req) =>
    signedIn(
      await accounts.signUp({
        username: field(req, 'username'),
        password: field(req, 'password'),
        email: field(req, 'email'),
        name: field(req, 'name'),
      }),
    ),
  );
  formRoute('cancel', signInPage, async () => ({
    error: 'access_denied',
    error_description: 'the user cancelled the sign-in',
  }));

  router.use(provider.callback());
  return router;
}
