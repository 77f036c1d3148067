/** `npm run token -- <username>`: prints a user token of the built-in development issuer. */
import { devAudience, devIssuerUrl, loadDevSigningKey, signUserToken } from '../src/auth/dev-issuer';
import { loadConfig } from '../src/config';

async function main() {
  const username = process.argv[2];
  if (!username || !/^[\w.@-]{1,64}$/.test(username)) {
    console.error('usage: npm run token -- <username>   (letters, digits, . _ @ -)');
    process.exit(2);
  }
  const config = loadConfig();
  if (config.oidcIssuer) {
    console.error('OIDC_ISSUER is set: get tokens from that identity provider instead.');
    process.exit(2);
  }
  const key = await loadDevSigningKey(config.dataDir);
  const token = await signUserToken(key, devIssuerUrl(config.publicUrl), devAudience(config), {
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
