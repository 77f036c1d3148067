import type { MikroORM } from '@mikro-orm/postgresql';
import { DevAccountService } from '../auth/dev-account.service';
import { createDevProvider } from '../auth/dev-issuer.provider';
import { devIssuerRoutes } from '../auth/dev-issuer.routes';
import { devIssuerUrl, loadDevSigningKey } from '../auth/dev-issuer';
import { discoveryVerifier, localVerifier, type TokenVerifier } from '../auth/token-verifier';
import type { Config } from '../config';
import type { Logger } from '../common/logger';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded-postgres';
import { openOrm } from '../db/orm';
import { createApp, type App } from './app';
import { createServices, type Services } from './services';

export interface Runtime {
  config: Config;
  orm: MikroORM;
  services: Services;
  app: App;
  /** Stops in reverse order of start: HTTP, database pool, embedded PostgreSQL. */
  stop(): Promise<void>;
}

/** Starts everything the configuration asks for; listening is left to the caller. */
export async function startRuntime(config: Config, log: Logger): Promise<Runtime> {
  let embedded: EmbeddedDatabase | undefined;
  let orm: MikroORM | undefined;
  try {
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      embedded = await startEmbeddedPostgres(config.dataDir, log);
      databaseUrl = embedded.url;
    }
    orm = await openOrm({ clientUrl: databaseUrl });
    log.info('database schema up to date');

    let verifier: TokenVerifier;
    const publicRoutes = [];
    if (config.oidcIssuer) {
      verifier = discoveryVerifier({
        issuer: config.oidcIssuer,
        audience: config.oidcAudience,
        cooldownSeconds: config.oidcJwksCooldownSeconds,
      });
    } else {
      const issuer = devIssuerUrl(config.publicUrl);
      const key = await loadDevSigningKey(config.dataDir);
      verifier = localVerifier({ issuer, audience: config.oidcAudience }, { keys: [key.publicJwk] });
      const accounts = new DevAccountService(orm);
      const provider = createDevProvider({ config, key, orm, accounts });
      publicRoutes.push({
        path: new URL(issuer).pathname,
        router: devIssuerRoutes(provider, accounts, config.publicUrl.startsWith('https:')),
      });
      log.warn(
        { issuer, signIn: `${config.publicUrl}/api/v1/auth/login` },
        'OIDC_ISSUER is unset: using the built-in development identity provider (not for production)',
      );
    }
    const services = createServices(config, orm, verifier);
    const app = await createApp({ config, log, orm, services, publicRoutes });
    const openOrmRef = orm;
    return {
      config,
      orm,
      services,
      app,
      stop: async () => {
        await app.close();
        await openOrmRef.close(true);
        await embedded?.stop();
      },
    };
  } catch (err) {
    await orm?.close(true).catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    throw err;
  }
}
