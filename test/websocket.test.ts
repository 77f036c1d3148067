import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { startTestApp, type TestApp } from './helpers/app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ SUBSCRIPTION_AUTH_RECHECK_SECONDS: '1' });
});
afterAll(() => t.close());

function connect(connectionParams: Record<string, unknown>): { client: Client; closed: Promise<number> } {
  let onClose!: (code: number) => void;
  const closed = new Promise<number>((r) => (onClose = r));
  const client = createClient({
    url: `ws://127.0.0.1:${t.port}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams,
    retryAttempts: 0,
    lazy: false,
    on: { closed: (e) => onClose((e as { code: number }).code) },
    // A refused connection is what some tests expect: they read its code above. The default
    // handler would print the whole CloseEvent (200 lines) into the test output.
    onNonLazyError: () => undefined,
  });
  return { client, closed };
}

function once(client: Client, query: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let result: unknown;
    client.subscribe(
      { query },
      { next: (v) => (result = v), error: reject, complete: () => resolve(result) },
    );
  });
}

describe('graphql-ws on /graphql', () => {
  it('authenticates in connectionParams and runs operations as that principal', async () => {
    const { client } = connect({ authorization: `Bearer ${await t.tokenFor('wsuser')}` });
    try {
      await expect(once(client, '{ me { userId } }')).resolves.toEqual({
        data: { me: { userId: 'wsuser' } },
      });
    } finally {
      await client.dispose();
    }
  });

  it('accepts an API key in connectionParams', async () => {
    const created = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', `Bearer ${await t.tokenFor('wskey')}`)
      .send({ name: 'ws' });
    const { client } = connect({ 'x-service-key': created.body.token });
    try {
      await expect(once(client, '{ me { userId } }')).resolves.toEqual({ data: { me: { userId: 'wskey' } } });
    } finally {
      await client.dispose();
    }
  });

  it('ends a connection whose API key is revoked while it is open', async () => {
    const auth = `Bearer ${await t.tokenFor('wsrevoked')}`;
    const created = await t.http().post('/api/v1/tokens').set('authorization', auth).send({ name: 'ws' });
    const { client, closed } = connect({ 'x-service-key': created.body.token });
    try {
      await expect(once(client, '{ me { userId } }')).resolves.toEqual({
        data: { me: { userId: 'wsrevoked' } },
      });
      const revoked = await t.http().delete(`/api/v1/tokens/${created.body.id}`).set('authorization', auth);
      expect(revoked.status).toBe(204);
      await expect(closed).resolves.toBe(4403);
    } finally {
      await client.dispose();
    }
  });

  it('closes a connection with a bad credential (4403)', async () => {
    const { client, closed } = connect({ authorization: 'Bearer not-a-token' });
    await expect(closed).resolves.toBe(4403);
    await client.dispose();
  });

  it('refuses operations without a credential', async () => {
    const { client } = connect({});
    try {
      const result = (await once(client, '{ me { userId } }').catch((e) => e)) as {
        errors?: { extensions: { code: string } }[];
      };
      expect(result.errors?.[0].extensions.code).toBe('UNAUTHENTICATED');
    } finally {
      await client.dispose();
    }
  });
});
