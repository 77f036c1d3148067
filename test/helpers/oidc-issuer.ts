import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/**
 * A local OIDC issuer: a discovery document and a JWKS on a port of the test's own, so the
 * service verifies tokens over the same discovery + JWKS path it uses in production.
 */
export class TestIssuer {
  private server!: http.Server;
  issuer!: string;
  private base!: string;
  jwksFetches = 0;
  private keys: { kid: string; privateKey: CryptoKey; publicJwk: JWK }[] = [];

  /** `trailingSlash`: an issuer identifier ending with "/", as Auth0's does. */
  static async start(opts: { trailingSlash?: boolean } = {}): Promise<TestIssuer> {
    const t = new TestIssuer();
    await t.rotateKey();
    t.server = http.createServer((req, res) => {
      if (req.url === '/.well-known/openid-configuration') {
        res.setHeader('content-type', 'application/json');
        return res.end(JSON.stringify({ issuer: t.issuer, jwks_uri: `${t.base}/jwks` }));
      }
      if (req.url === '/jwks') {
        t.jwksFetches++;
        res.setHeader('content-type', 'application/json');
        return res.end(JSON.stringify({ keys: t.keys.map((k) => k.publicJwk) }));
      }
      res.statusCode = 404;
      res.end();
    });
    await new Promise<void>((r) => t.server.listen(0, '127.0.0.1', r));
    t.base = `http://127.0.0.1:${(t.server.address() as AddressInfo).port}`;
    t.issuer = opts.trailingSlash ? `${t.base}/` : t.base;
    return t;
  }

  /** A fresh signing key, not yet published (key generation is slow; tests time around it). */
  async nextKey(): Promise<{ kid: string; privateKey: CryptoKey; publicJwk: JWK }> {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    const kid = `k${this.keys.length + 1}`;
    return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
  }

  /** Publishes a signing key in the JWKS and signs with it from now on. */
  async rotateKey(key?: { kid: string; privateKey: CryptoKey; publicJwk: JWK }): Promise<void> {
    this.keys.push(key ?? (await this.nextKey()));
  }

  /** A user token; `opts` bends it for negative tests. */
  async token(
    sub: string,
    opts: {
      claims?: Record<string, unknown>;
      issuer?: string;
      audience?: string;
      expiresIn?: string | number;
      notBefore?: number;
    } = {},
  ): Promise<string> {
    const { kid, privateKey } = this.keys[this.keys.length - 1];
    const jwt = new SignJWT({ preferred_username: sub, email: `${sub}@example.test`, ...opts.claims })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setSubject(sub)
      .setIssuer(opts.issuer ?? this.issuer)
      .setAudience(opts.audience ?? 'media-platform-test')
      .setIssuedAt()
      .setExpirationTime(opts.expiresIn ?? '1h');
    if (opts.notBefore !== undefined) jwt.setNotBefore(opts.notBefore);
    return jwt.sign(privateKey);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}
