import type { IncomingHttpHeaders } from 'node:http';
import type { RequestHandler } from 'express';
import type { Authenticator, Credentials } from './authenticator';

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(',') : v);

/**
 * The stage every API request passes first: a bad credential is a 401, whatever the path; the
 * principal (null when anonymous) goes to `res.locals.principal`. A user token already verified
 * (or no credential) is answered without a promise.
 */
export function authenticatedRequests(authenticator: Authenticator, apiKeyHeader: string): RequestHandler {
  const credentialsOf = (headers: IncomingHttpHeaders): Credentials => ({
    authorization: one(headers.authorization),
    apiKey: one(headers[apiKeyHeader]),
  });
  return (req, res, next) => {
    const credentials = credentialsOf(req.headers);
    const known = authenticator.known(credentials);
    if (known !== undefined) {
      res.locals.principal = known;
      return next();
    }
    return authenticator
      .authenticate(credentials)
      .then((principal) => {
        res.locals.principal = principal;
        next();
      })
      .catch(next);
  };
}
