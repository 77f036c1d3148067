import type { GraphQLFormattedError } from 'graphql';
import {
  graphqlErrorExtensions,
  httpStatusOf,
  isErrorCode,
  toAppError,
  withoutSuggestions,
} from '../common/errors';
import type { Logger } from '../common/logger';

export type GraphQLErrorFormatter = (
  formatted: GraphQLFormattedError,
  error: unknown,
) => GraphQLFormattedError;

/**
 * Maps GraphQL-level failures onto the service's codes; unknown errors become INTERNAL. Every
 * error of every transport passes here, so this is where production hides suggestions.
 */
export function formatGraphQLError(log: Logger, hideSuggestions: boolean): GraphQLErrorFormatter {
  return (formatted, error) => {
    const original = (error as { originalError?: unknown }).originalError;
    const requestId = (formatted.extensions?.requestId as string) ?? undefined;
    if (original === undefined || original === null || (original as Error).name === 'GraphQLError') {
      // Parse, validation and variable errors: the request's fault. Keep graphql's message.
      const code = formatted.extensions?.code;
      // Persisted-query clients (Apollo Client, urql, ...) recognise these codes: they then send
      // the whole document along with its hash.
      if (code === 'PERSISTED_QUERY_NOT_FOUND' || code === 'PERSISTED_QUERY_NOT_SUPPORTED')
        return { message: formatted.message, extensions: { code } };
      return {
        ...formatted,
        message: hideSuggestions ? withoutSuggestions(formatted.message) : formatted.message,
        extensions: { code: isErrorCode(code) ? code : 'BAD_REQUEST' },
      };
    }
    const { error: appError, unexpected } = toAppError(original);
    if (unexpected) log.error({ err: original, path: formatted.path }, 'unexpected error in a resolver');
    return {
      message: appError.message,
      locations: formatted.locations,
      path: formatted.path,
      extensions: graphqlErrorExtensions(appError, requestId),
    };
  };
}

/** Request-level failures whose HTTP status follows their code when the answer has no data. */
const REQUEST_LEVEL_CODES = new Set([
  'BAD_REQUEST',
  'UNAUTHENTICATED',
  'PAYLOAD_TOO_LARGE',
  'UNAVAILABLE',
  'INSUFFICIENT_STORAGE',
  'RATE_LIMITED',
]);

/**
 * The HTTP status (and Retry-After) of a GraphQL answer that failed as a whole, which GraphQL
 * over HTTP would answer 200 or 500; undefined when the answer keeps its status.
 */
export function requestLevelStatus(
  errors: readonly GraphQLFormattedError[] | undefined,
  data: unknown,
): { status: number; retryAfter?: unknown } | undefined {
  if (!errors?.length || data) return undefined;
  const codes = new Set(errors.map((e) => String(e.extensions?.code)));
  const [code] = codes;
  if (codes.size !== 1 || !REQUEST_LEVEL_CODES.has(code)) return undefined;
  return { status: httpStatusOf(code), retryAfter: errors[0].extensions?.retryAfterSeconds };
}
