import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors as joseErrors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { AppError } from '../common/errors';
import type { UserClaims } from '../users/user.service';

/** Only asymmetric algorithms: a symmetric one would let anyone holding the JWKS forge tokens. */
export const ALLOWED_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'];
const CLOCK_TOLERANCE_SECONDS = 60;

export interface VerifiedClaims extends JWTPayload, UserClaims {
  sub: string;
}

export interface TokenVerifier {
  readonly issuer: string;
  verify(token: string): Promise<VerifiedClaims>;
}

interface VerifierOptions {
  issuer: string;
  audience?: string;
  /** Least time between two JWKS fetches caused by unknown key ids. */
  cooldownSeconds?: number;
}

class JoseVerifier implements TokenVerifier {
  constructor(
    readonly issuer: string,
    private readonly audience: string | undefined,
    private readonly keys: () => Promise<JWTVerifyGetKey>,
  ) {}

  async verify(token: string): Promise<VerifiedClaims> {
    const keys = await this.keys();
    try {
      const { payload } = await jwtVerify(token, keys, {
        issuer: this.issuer,
        audience: this.audience,
        algorithms: ALLOWED_ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ['sub', 'exp'],
      });
      return payload as VerifiedClaims;
    } catch (err) {
      if (err instanceof joseErrors.JWKSTimeout || (err instanceof Error && err.name === 'TypeError')) {
        throw new AppError(
          'UNAVAILABLE',
          'the identity provider is unreachable, try again shortly',
          undefined,
          5,
        );
      }
      if (err instanceof joseErrors.JOSEError)
        throw new AppError('UNAUTHENTICATED', `invalid token: ${describe(err)}`);
      throw err;
    }
  }
}

function describe(err: InstanceType<typeof joseErrors.JOSEError>): string {
  if (err instanceof joseErrors.JWTExpired) return 'expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed)
    return `claim "${err.claim}" ${err.reason === 'check_failed' ? 'is not accepted' : 'is missing or malformed'}`;
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'signing algorithm not allowed';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'signature verification failed';
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'no matching signing key';
  return 'malformed';
}

/**
 * Verifies tokens of an external OIDC issuer. The JWKS address comes from the issuer's
 * discovery document (fetched once, again after a failure); jose caches the keys and refetches
 * them on an unknown `kid`, at most once per cooldown.
 */
export function discoveryVerifier({
  issuer,
  audience,
  cooldownSeconds = 30,
}: VerifierOptions): TokenVerifier {
  let keys: Promise<JWTVerifyGetKey> | undefined;
  const load = async (): Promise<JWTVerifyGetKey> => {
    const res = await fetch(`${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`, {
      signal: AbortSignal.timeout(5000),
    });
    if (!res.ok) throw new Error(`discovery answered ${res.status}`);
    const doc = (await res.json()) as { issuer?: string; jwks_uri?: string };
    if (doc.issuer !== issuer || typeof doc.jwks_uri !== 'string') {
      throw new Error(
        `discovery document of ${issuer} names issuer ${doc.issuer} and jwks_uri ${doc.jwks_uri}`,
      );
    }
    return createRemoteJWKSet(new URL(doc.jwks_uri), {
      cooldownDuration: cooldownSeconds * 1000,
      cacheMaxAge: 600_000,
      timeoutDuration: 5000,
    });
  };
  return new JoseVerifier(issuer, audience, async () => {
    keys ??= load();
    try {
      return await keys;
    } catch {
      keys = undefined;
      throw new AppError(
        'UNAVAILABLE',
        'the identity provider is unreachable, try again shortly',
        undefined,
        5,
      );
    }
  });
}

/** Verifies tokens of the built-in development issuer against its own public keys. */
export function localVerifier({ issuer, audience }: VerifierOptions, jwks: JSONWebKeySet): TokenVerifier {
  const keys = createLocalJWKSet(jwks);
  return new JoseVerifier(issuer, audience, async () => keys);
}
