import { Router } from 'express';
import { discoveryDocument, type SigningKey } from './dev-issuer';

/** Discovery document and JWKS of the built-in development issuer, mounted at /oidc. */
export function devIssuerRoutes(issuer: string, key: SigningKey): Router {
  const router = Router();
  router.get('/.well-known/openid-configuration', (_req, res) => {
    res.json(discoveryDocument(issuer));
  });
  router.get('/jwks', (_req, res) => {
    res.json({ keys: [key.publicJwk] });
  });
  return router;
}
