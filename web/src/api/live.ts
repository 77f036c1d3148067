import { createClient, type Client } from 'graphql-ws';
import type { TypedDocumentString } from '../generated/graphql';
import { accessToken, onScopeChange } from './session';

export type LiveState = 'connecting' | 'live' | 'reconnecting';

let client: Client | null = null;
let state: LiveState = 'connecting';
let connectedBefore = false;
const stateListeners = new Set<(s: LiveState) => void>();
const reconnectListeners = new Set<() => void>();

function setState(next: LiveState) {
  state = next;
  for (const f of stateListeners) f(next);
}

/**
 * One graphql-ws connection for the page, authenticated in connectionParams with the current
 * token (read again at each reconnection). It retries for ever; after a reconnection every view
 * re-reads what it shows, since events sent while the socket was down are lost.
 */
function live(): Client {
  if (client) return client;
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
  client = createClient({
    url,
    lazy: false,
    keepAlive: 15_000,
    retryAttempts: Number.POSITIVE_INFINITY,
    shouldRetry: () => true,
    retryWait: async (retries) => {
      await new Promise((r) =>
        setTimeout(r, Math.min(500 * 2 ** retries, 10_000) * (0.5 + Math.random() / 2)),
      );
    },
    connectionParams: async () => ({ authorization: `Bearer ${await accessToken()}` }),
    on: {
      connected: () => {
        setState('live');
        if (connectedBefore) for (const f of reconnectListeners) f();
        connectedBefore = true;
      },
      closed: () => {
        if (connectedBefore) setState('reconnecting');
      },
    },
  });
  return client;
}

/**
 * Another scope is another principal: a new connection. This runs before the views re-render for
 * the new scope (it is the first listener), so they subscribe on the new connection.
 */
onScopeChange(() => {
  const old = client;
  client = null;
  connectedBefore = false;
  setState('connecting');
  void old?.dispose();
  live();
});

/** Opens the connection (at the app's start), so the live state shows before any view subscribes. */
export function startLive(): void {
  live();
}

export function liveState(): LiveState {
  return state;
}

export function onLiveState(f: (s: LiveState) => void): () => void {
  stateListeners.add(f);
  return () => stateListeners.delete(f);
}

/** Called after the socket came back: views re-read what they show. */
export function onReconnect(f: () => void): () => void {
  reconnectListeners.add(f);
  return () => reconnectListeners.delete(f);
}

/** Subscribes with a typed document; returns the unsubscribe function. */
export function subscribe<R, V>(
  doc: TypedDocumentString<R, V>,
  variables: V,
  onData: (data: R) => void,
  onError?: (message: string) => void,
): () => void {
  return live().subscribe<R>(
    { query: doc.toString(), variables: variables as Record<string, unknown> },
    {
      next: (result) => {
        if (result.data) onData(result.data as R);
        else if (result.errors?.length) onError?.(result.errors[0].message);
      },
      error: (err) => {
        const message = Array.isArray(err)
          ? String(err[0]?.message)
          : err instanceof Error
            ? err.message
            : '';
        // A closed socket is retried by the client; only operation errors are worth showing.
        if (message) onError?.(message);
      },
      complete: () => undefined,
    },
  );
}
