/**
 * `npm run token -- <username>`: prints a user token of the built-in development issuer. It reads
 * the configuration the service reads (environment and `.env`: PORT, PUBLIC_URL, DATA_DIR, ...)
 * and checks that the running service accepts its key, so a token is never silently useless.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { devAudience, devIssuerUrl, loadDevSigningKey, signUserToken } from '../src/auth/dev-issuer';
import { loadConfigOrExit } from '../src/config';

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

/** The key ids the running service's issuer publishes, or why they could not be read. */
async function publishedKeys(issuer: string): Promise<string[]> {
  try {
    const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as {
      jwks_uri: string;
    };
    const jwks = (await (await fetch(discovery.jwks_uri)).json()) as { keys: { kid?: string }[] };
    return jwks.keys.map((k) => k.kid ?? '');
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    fail(
      `The service is not answering at ${issuer} (${cause}). Start it (npm start), or give this ` +
        'command the PORT / PUBLIC_URL / DATA_DIR the service runs with.',
    );
  }
}

async function main() {
  const username = process.argv[2];
  if (!username || !/^[\w.@-]{1,64}$/.test(username)) {
    console.error('usage: npm run token -- <username>   (letters, digits, . _ @ -)');
    process.exit(2);
  }
  const config = loadConfigOrExit();
  if (config.oidcIssuer) fail('OIDC_ISSUER is set: get tokens from that identity provider instead.');
  const keyFile = path.join(config.dataDir, 'oidc', 'signing-key.json');
  if (!existsSync(keyFile))
    fail(
      `No development signing key in ${config.dataDir}: the service has not run with this DATA_DIR. ` +
        'Start it (npm start), or set DATA_DIR as the service has it.',
    );
  const issuer = devIssuerUrl(config.publicUrl);
  const key = await loadDevSigningKey(config.dataDir);
  if (!(await publishedKeys(issuer)).includes(key.kid))
    fail(
      `The service at ${config.publicUrl} signs with another key: it runs with another DATA_DIR than ${config.dataDir}.`,
    );
  const token = await signUserToken(key, issuer, devAudience(config), {
    sub: username,
    preferred_username: username,
    name: username,
  });
  process.stdout.write(`${token}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
