import { existsSync } from 'node:fs';
import path from 'node:path';
import { Router, type Request, type Response } from 'express';
import { SESSION_COOKIE } from '../auth/login.routes';
import { readCookie } from '../http/http.helpers';

/** Paths of the API and of other routes: never answered with the web app's page. */
const RESERVED = /^\/(api|graphql|graphql-ide|uploads|media|oidc|healthz|readyz|metrics|assets)(\/|$)/;
/** The page the app shows after signing out: served without a session. */
const SIGNED_OUT_PATH = '/signed-out';
/** Hashed file names (Vite's `name-<hash>.ext`): their content never changes. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
const FILE_NAME = /^[\w.-]+$/;

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
};

/**
 * Sends a file of the build, or its precompressed variant (`.br`, `.gz`, written by the build)
 * when the client accepts it: no compression work per request.
 */
function sendBuilt(req: Request, res: Response, file: string, cacheControl: string): void {
  res.setHeader('Content-Type', TYPES[path.extname(file)] ?? 'application/octet-stream');
  res.setHeader('Cache-Control', cacheControl);
  res.vary('Accept-Encoding');
  // Brotli when accepted at all (it is smaller), else gzip, else the file itself.
  const encoding = (['br', 'gzip'] as const).find(
    (e) => req.acceptsEncodings(e) === e && existsSync(`${file}.${e === 'br' ? 'br' : 'gz'}`),
  );
  const sent = encoding ? `${file}.${encoding === 'br' ? 'br' : 'gz'}` : file;
  if (encoding) res.setHeader('Content-Encoding', encoding);
  res.sendFile(sent, { dotfiles: 'deny', cacheControl: false, lastModified: false });
}

export interface WebAppOptions {
  /** The web app's build (`dist/web`): `index.html`, `assets/`, and their `.br`/`.gz` variants. */
  dir: string;
  /** Origins besides this one that pages may load images and files from (the CDN). */
  mediaOrigins: string[];
}

/**
 * The web app: hashed assets cached for a year, and its page for every other browser navigation
 * outside the API's paths (the app routes on the client). Without a build nothing is served, and
 * `/` stays the API's JSON 404.
 */
export function webAppRoutes({ dir, mediaOrigins }: WebAppOptions): Router {
  const router = Router();
  const index = path.join(dir, 'index.html');
  const media = [...new Set(mediaOrigins)].join(' ');
  const csp = [
    "default-src 'self'",
    `img-src 'self' data: blob: ${media}`,
    `connect-src 'self' ${media}`,
    "style-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'self'",
  ].join('; ');

  router.get('/assets/:file', (req, res, next) => {
    const file = req.params.file;
    if (!FILE_NAME.test(file) || /\.(br|gz)$/.test(file)) return next();
    const full = path.join(dir, 'assets', file);
    if (!existsSync(full)) return next();
    sendBuilt(req, res, full, IMMUTABLE);
  });

  router.get('/favicon.svg', (req, res, next) => {
    const full = path.join(dir, 'favicon.svg');
    if (!existsSync(full)) return next();
    sendBuilt(req, res, full, 'public, max-age=86400');
  });

  router.get(/.*/, (req, res, next) => {
    // Passed on, the request is not this route's: an error answered later (a 401 of the API,
    // say) must not be labelled by it in the metrics.
    const passOn = () => {
      req.route = undefined;
      next();
    };
    if (RESERVED.test(req.path) || !existsSync(index)) return passOn();
    // Only navigations: an API client asking for JSON keeps the JSON 404.
    if (req.accepts(['application/json', 'text/html']) !== 'text/html') return passOn();
    // A visitor without a session goes through the login flow first and comes back here. (With a
    // cookie that has expired, the app finds out from the token endpoint and does the same.)
    if (!readCookie(req, SESSION_COOKIE) && req.path !== SIGNED_OUT_PATH) {
      const returnTo = req.originalUrl.length <= 2048 ? req.originalUrl : req.path;
      return res.redirect(302, `/api/v1/auth/login?return_to=${encodeURIComponent(returnTo)}`);
    }
    res.setHeader('Content-Security-Policy', csp);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    sendBuilt(req, res, index, 'no-cache');
  });
  return router;
}
