import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

/** Runs one query over graphql-ws on `/graphql` with these connectionParams; answers its result. */
export async function queryOverWebsocket(
  baseUrl: string,
  connectionParams: Record<string, unknown>,
  query: string,
): Promise<unknown> {
  const client = createClient({
    url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams,
    retryAttempts: 0,
  });
  try {
    return await new Promise((resolve, reject) => {
      let value: unknown;
      client.subscribe(
        { query },
        { next: (v) => (value = v), error: reject, complete: () => resolve(value) },
      );
    });
  } finally {
    await client.dispose();
  }
}
