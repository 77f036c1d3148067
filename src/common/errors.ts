import { GraphQLError, type GraphQLFormattedError } from 'graphql';

export type ErrorCode =
  | 'BAD_REQUEST'
  | 'VALIDATION_FAILED'
  | 'UNAUTHENTICATED'
  | 'BUDGET_EXCEEDED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RANGE_NOT_SATISFIABLE'
  | 'RATE_LIMITED'
  | 'BAD_GATEWAY'
  | 'UNAVAILABLE'
  | 'INSUFFICIENT_STORAGE'
  | 'INTERNAL';

const httpStatus: Record<ErrorCode, number> = {
  BAD_REQUEST: 400,
  VALIDATION_FAILED: 400,
  UNAUTHENTICATED: 401,
  BUDGET_EXCEEDED: 402,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RANGE_NOT_SATISFIABLE: 416,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  BAD_GATEWAY: 502,
  UNAVAILABLE: 503,
  INSUFFICIENT_STORAGE: 507,
};

/** Every code, in the order of their statuses (the OpenAPI document lists them). */
export const ERROR_CODES = Object.keys(httpStatus) as ErrorCode[];

/** Field name -> what is wrong with it. */
export type ErrorDetails = Record<string, string>;

/** The one error class of the service: a code clients can branch on and a human message. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'AppError';
  }

  /** Headers an HTTP answer of this error carries besides Retry-After (a rate limit's state). */
  get headers(): Record<string, string> | undefined {
    return undefined;
  }

  static notFound(what: string): AppError {
    return new AppError('NOT_FOUND', `${what} not found`);
  }

  static validation(details: ErrorDetails): AppError {
    const fields = Object.keys(details);
    return new AppError(
      'VALIDATION_FAILED',
      `invalid ${fields.join(', ')}: ${Object.values(details)[0]}`,
      details,
    );
  }
}

export function httpStatusOf(code: string): number {
  return httpStatus[code as ErrorCode] ?? 500;
}

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && code in httpStatus;
}

/**
 * Errors raised by the database driver when the server is gone, refusing connections, or not
 * answering within the query bound (src/db/pg-bounds.ts; `57014` is the server's own statement
 * timeout). An error wrapping one of these (`cause`, or graphql-js's `thrownValue`: it wraps a
 * value that is not an `Error` of its own realm, as the driver's socket errors are under jest's
 * sandbox) is one too.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (
    let e = err as { code?: string; message?: string; cause?: unknown; thrownValue?: unknown } | undefined,
      depth = 0;
    e && depth < 5;
    depth++
  ) {
    if (UNAVAILABLE_CODES.has(e.code ?? '')) return true;
    if (UNAVAILABLE_MESSAGE.test(e.message ?? '')) return true;
    e = (e.cause ?? e.thrownValue) as typeof e;
  }
  return false;
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  '57014',
  '57P01',
  '57P02',
  '57P03',
  '08006',
  '08001',
  '08003',
]);
const UNAVAILABLE_MESSAGE =
  /Connection terminated|Knex: Timeout acquiring a connection|connection is closed|^timeout expired$|the database did not answer within/i;

/**
 * PostgreSQL's deadlock_detected (40P01) and serialization_failure (40001): the transaction lost
 * to a concurrent one and was rolled back whole, so the same request may simply be sent again.
 */
export function isTransactionCollision(err: unknown): boolean {
  for (
    let e = err as { code?: string; cause?: unknown; thrownValue?: unknown } | undefined, depth = 0;
    e && depth < 5;
    depth++
  ) {
    if (e.code === '40P01' || e.code === '40001') return true;
    e = (e.cause ?? e.thrownValue) as typeof e;
  }
  return false;
}

/**
 * A GraphQL message without its "Did you mean ...?" part: suggestions name fields, types and
 * enum values, which production does not show (and REST clients never need).
 */
export function withoutSuggestions(message: string): string {
  return message.replace(/\s*Did you mean [^?]*\?/g, '').trim();
}

/** Turns anything thrown into an AppError; unknown errors become INTERNAL (the caller logs them). */
export function toAppError(err: unknown): { error: AppError; unexpected: boolean } {
  if (err instanceof AppError) return { error: err, unexpected: false };
  if (err instanceof GraphQLError && err.originalError) return toAppError(err.originalError);
  // Client errors of HTTP libraries (http-errors' convention: `status` and `expose`), such as a
  // malformed GraphQL multipart request: the request's fault, said in the library's words.
  const http = err as { status?: number; expose?: boolean; message?: string } | undefined;
  if (http?.expose && typeof http.status === 'number' && http.status >= 400 && http.status < 500) {
    const code = http.status === 413 ? 'PAYLOAD_TOO_LARGE' : 'BAD_REQUEST';
    return { error: new AppError(code, http.message || 'bad request'), unexpected: false };
  }
  if (isTransactionCollision(err)) {
    return {
      error: new AppError('UNAVAILABLE', 'the change met a concurrent one; try again', undefined, 1),
      unexpected: false,
    };
  }
  if (isDatabaseUnavailable(err)) {
    return {
      error: new AppError('UNAVAILABLE', 'the database is unavailable, try again shortly', undefined, 5),
      unexpected: false,
    };
  }
  return { error: new AppError('INTERNAL', 'internal error'), unexpected: true };
}

/** The REST error body of DESIGN.md. */
export function restErrorBody(error: AppError, requestId?: string) {
  return {
    error: {
      code: error.code,
      message: error.message,
      ...(error.details ? { details: error.details } : {}),
      ...(requestId && error.code === 'INTERNAL' ? { request_id: requestId } : {}),
    },
  };
}

/** GraphQL errors carry the same code in extensions.code. */
export function graphqlErrorExtensions(
  error: AppError,
  requestId?: string,
): GraphQLFormattedError['extensions'] {
  return {
    code: error.code,
    ...(error.details ? { details: error.details } : {}),
    // What `Retry-After` says over REST (rate limits, a database that is briefly away).
    ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
    ...(requestId && error.code === 'INTERNAL' ? { requestId } : {}),
  };
}
