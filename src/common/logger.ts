import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger };

export interface LoggerOptions {
  /** The header that carries API keys (`API_KEY_HEADER`); redacted like Authorization. */
  apiKeyHeader?: string;
  /** Where lines go; standard output by default (tests read them). */
  destination?: DestinationStream;
}

/** Headers that carry credentials: never logged. */
const SECRET_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'x-api-key', 'x-service-key'];
/** Fields that hold credentials wherever they appear, at the top of a line or one level down. */
const SECRET_FIELDS = [
  'password',
  'token',
  'api_key',
  'apiKey',
  'access_token',
  'refresh_token',
  'id_token',
  'accessToken',
  'refreshToken',
  'client_secret',
  'clientSecret',
  'secret',
  'sharedSecret',
  'registrationSharedSecret',
  'databaseUrl',
];

export const REDACTED = '[redacted]';

/**
 * JSON lines (pino). Credentials are redacted wherever the service could log them: request and
 * response headers, and fields named like secrets in any logged object (bodies are never logged).
 */
export function createLogger(level: string, opts: LoggerOptions = {}): Logger {
  const headers = [...new Set([...SECRET_HEADERS, opts.apiKeyHeader ?? 'x-service-key'])];
  return pino(
    {
      level,
      base: { service: 'media-platform' },
      redact: {
        paths: [
          ...headers.map((h) => `req.headers["${h}"]`),
          'res.headers["set-cookie"]',
          ...SECRET_FIELDS.flatMap((f) => [f, `*.${f}`]),
        ],
        censor: REDACTED,
      },
    },
    opts.destination,
  );
}

/** Query parameters that carry credentials or one-time codes (login callbacks, tokens in URLs). */
const SECRET_QUERY =
  /^(code|state|token|access_token|refresh_token|id_token|api_key|key|password|client_secret)$/i;

/** A request URL for the logs: the values of secret query parameters replaced. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  let changed = false;
  for (const name of [...params.keys()]) {
    if (SECRET_QUERY.test(name)) {
      params.set(name, REDACTED);
      changed = true;
    }
  }
  return changed ? `${url.slice(0, q)}?${params.toString()}` : url;
}
