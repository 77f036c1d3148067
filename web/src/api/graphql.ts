import type { TypedDocumentString } from '../generated/graphql';
import { accessToken, dropToken, type Scope } from './session';

/** A failed operation: the service's error code, and per-field details for VALIDATION_FAILED. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly details: Record<string, string> = {},
  ) {
    super(message);
  }
}

interface GraphQLResponse<R> {
  data?: R | null;
  errors?: { message: string; extensions?: { code?: string; details?: Record<string, string> } }[];
  error?: { code: string; message: string; details?: Record<string, string> };
}

export interface CallOptions {
  /** Whose token: the acting scope unless set (account management acts as the user: null). */
  scope?: Scope;
  signal?: AbortSignal;
}

/** Runs a typed document over HTTP (`POST /graphql`) with the app's access token. */
export async function gql<R, V>(
  doc: TypedDocumentString<R, V>,
  variables?: V,
  opts: CallOptions = {},
): Promise<R> {
  for (let attempt = 0; ; attempt++) {
    const token = await accessToken(opts.scope);
    const res = await fetch('/graphql', {
      method: 'POST',
      signal: opts.signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: doc.toString(), variables: variables ?? {} }),
    });
    const body = (await res.json().catch(() => ({}))) as GraphQLResponse<R>;
    if (res.status === 401 && attempt === 0) {
      dropToken(token);
      continue;
    }
    const first = body.errors?.[0];
    if (first)
      throw new ApiError(first.message, first.extensions?.code ?? 'INTERNAL', first.extensions?.details);
    if (body.error) throw new ApiError(body.error.message, body.error.code, body.error.details);
    if (!res.ok || !body.data) throw new ApiError(`the service answered ${res.status}`, 'INTERNAL');
    return body.data;
  }
}

/** A short text for an error, for the places that show one. */
export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}
