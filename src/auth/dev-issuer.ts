import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';

/** The user token lifetime of the spec: three days. */
export const USER_TOKEN_TTL_SECONDS = 3 * 24 * 3600;

export interface SigningKey {
  kid: string;
  alg: 'RS256';
  privateJwk: JWK;
  publicJwk: JWK;
}

/**
 * The development issuer's signing key, generated on first use and kept under DATA_DIR so that
 * tokens survive restarts. The login flow's identity provider signs with the same key.
 */
export async function loadDevSigningKey(dataDir: string): Promise<SigningKey> {
  const file = path.join(dataDir, 'oidc', 'signing-key.json');
  if (existsSync(file)) return JSON.parse(await readFile(file, 'utf8')) as SigningKey;
  const { privateKey, publicKey } = await generateKeyPair('RS256', {
    modulusLength: 2048,
    extractable: true,
  });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const key: SigningKey = {
    kid,
    alg: 'RS256',
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' },
    publicJwk: { ...publicJwk, kid, alg: 'RS256', use: 'sig' },
  };
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify(key), { mode: 0o600, flag: 'wx' }).catch(async (err) => {
    // Another process created it first: use theirs.
    if (err.code !== 'EEXIST') throw err;
  });
  return JSON.parse(await readFile(file, 'utf8')) as SigningKey;
}

export function devIssuerUrl(publicUrl: string): string {
  return `${publicUrl}/oidc`;
}

/** The API as a resource server (RFC 8707) of the development issuer: its access tokens are JWTs. */
export function apiResource(publicUrl: string): string {
  return `${publicUrl}/api`;
}

/** The `aud` of the development issuer's user tokens, from the login flow and `npm run token` alike. */
export function devAudience(config: { oidcAudience?: string; oidcClientId: string }): string {
  return config.oidcAudience ?? config.oidcClientId;
}

export interface TokenClaims {
  sub: string;
  preferred_username?: string;
  name?: string;
  email?: string;
  email_verified?: boolean;
  [claim: string]: unknown;
}

export async function signUserToken(
  key: SigningKey,
  issuer: string,
  audience: string,
  claims: TokenClaims,
  ttlSeconds = USER_TOKEN_TTL_SECONDS,
): Promise<string> {
  const privateKey = await importJWK(key.privateJwk, key.alg);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime(`${ttlSeconds}s`)
    .sign(privateKey);
}
