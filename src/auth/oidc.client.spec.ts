import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AppError } from '../common/errors';
import { openIdClient, type OpenIdClientOptions } from './oidc.client';

/** A local authorization server: discovery, and a token endpoint that records what it was sent. */
async function startPeer() {
  const peer = {
    issuer: '',
    discoveries: 0,
    discoveryStatus: 200,
    tokenRequests: [] as { authorization?: string; body: URLSearchParams }[],
    server: http.createServer((req, res) => {
      if (req.url === '/.well-known/openid-configuration') {
        peer.discoveries++;
        res.statusCode = peer.discoveryStatus;
        res.setHeader('content-type', 'application/json');
        return res.end(
          JSON.stringify({
            issuer: peer.issuer,
            authorization_endpoint: `${peer.issuer}/authorize`,
            token_endpoint: `${peer.issuer}/token`,
            jwks_uri: `${peer.issuer}/jwks`,
          }),
        );
      }
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        peer.tokenRequests.push({
          authorization: req.headers.authorization,
          body: new URLSearchParams(body),
        });
        res.statusCode = 400;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ error: 'invalid_grant', error_description: 'spent' }));
      });
    }),
  };
  await new Promise<void>((r) => peer.server.listen(0, '127.0.0.1', r));
  peer.issuer = `http://127.0.0.1:${(peer.server.address() as AddressInfo).port}`;
  return peer;
}

describe('openIdClient', () => {
  let peer: Awaited<ReturnType<typeof startPeer>>;
  beforeEach(async () => {
    peer = await startPeer();
  });
  afterEach(async () => {
    peer.server.closeAllConnections();
    await new Promise((r) => peer.server.close(r));
  });

  const client = (opts: Partial<OpenIdClientOptions> = {}) =>
    openIdClient({
      issuer: peer.issuer,
      clientId: 'app',
      clientSecret: 's3cret',
      clientAuthMethod: 'client_secret_post',
      scopes: 'openid email',
      timeoutSeconds: 2,
      ...opts,
    });
  const start = { redirectUri: 'http://app.test/cb', state: 'st', nonce: 'no', codeChallenge: 'ch' };
  const caught = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: unknown) => e as AppError,
    );

  it('discovers at first use, once, and again after a failure', async () => {
    peer.discoveryStatus = 503;
    const idp = client({ audience: 'https://api.test' });
    expect(peer.discoveries).toBe(0);
    const failed = await caught(idp.authorizationUrl(start));
    expect(failed).toBeInstanceOf(AppError);
    expect(failed!.code).toBe('BAD_GATEWAY');
    peer.discoveryStatus = 200;
    const url = new URL(await idp.authorizationUrl(start));
    await idp.authorizationUrl(start);
    expect(peer.discoveries).toBe(2);
    expect(`${url.origin}${url.pathname}`).toBe(`${peer.issuer}/authorize`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: 'app',
      response_type: 'code',
      redirect_uri: 'http://app.test/cb',
      scope: 'openid email',
      state: 'st',
      nonce: 'no',
      code_challenge: 'ch',
      code_challenge_method: 'S256',
      audience: 'https://api.test',
    });
  });

  it('authenticates with client_secret_basic when configured; a refused code is 400', async () => {
    const callback = new URL('http://app.test/cb?code=abc&state=st');
    const err = await caught(
      client({ clientAuthMethod: 'client_secret_basic' }).exchangeCode(callback, {
        state: 'st',
        nonce: 'no',
        codeVerifier: 'v'.repeat(43),
      }),
    );
    expect(err!.code).toBe('BAD_REQUEST');
    const [sent] = peer.tokenRequests;
    expect(sent.authorization).toBe(`Basic ${Buffer.from('app:s3cret').toString('base64')}`);
    expect(sent.body.get('client_secret')).toBeNull();
    expect(Object.fromEntries(sent.body)).toMatchObject({
      grant_type: 'authorization_code',
      code: 'abc',
      redirect_uri: 'http://app.test/cb',
      code_verifier: 'v'.repeat(43),
    });
  });

  it('authenticates with client_secret_post by default; a refused refresh token is 401', async () => {
    const err = await caught(client().refresh('rt'));
    expect(err!.code).toBe('UNAUTHENTICATED');
    const [sent] = peer.tokenRequests;
    expect(sent.authorization).toBeUndefined();
    expect(Object.fromEntries(sent.body)).toMatchObject({
      grant_type: 'refresh_token',
      refresh_token: 'rt',
      client_id: 'app',
      client_secret: 's3cret',
    });
  });

  it('turns an error answered to the callback into 401 without asking for tokens', async () => {
    const callback = new URL('http://app.test/cb?error=access_denied&error_description=no%20thanks&state=st');
    const err = await caught(
      client().exchangeCode(callback, { state: 'st', nonce: 'no', codeVerifier: 'v' }),
    );
    expect(err!.code).toBe('UNAUTHENTICATED');
    expect(err!.message).toContain('access_denied: no thanks');
    expect(peer.tokenRequests).toHaveLength(0);
  });
});
