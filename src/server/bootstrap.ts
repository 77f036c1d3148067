import type { MikroORM } from '@mikro-orm/postgresql';
import { devIssuerRoutes } from '../auth/dev-issuer.routes';
import { devIssuerUrl, loadDevSigningKey } from '../auth/dev-issuer';
import { discoveryVerifier, localVerifier, type TokenVerifier } from '../auth/token-verifier';
import { createBridge, type Bridge } from '../chat-bridge/chat-bridge.app';
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
  /** The chat bridge's listener and processes, when the `bridge` role runs. */
  bridge: Bridge | null;
  /** Stops in reverse order of start: HTTP, bridge processes, database pool, embedded PostgreSQL. */
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
      publicRoutes.push({ path: '/oidc', router: devIssuerRoutes(issuer, key) });
      log.warn({ issuer }, 'OIDC_ISSUER is unset: using the built-in development issuer');
    }
    const services = createServices(config, orm, verifier);
    const app = await createApp({ config, log, orm, services, publicRoutes });
    const bridge = config.roles.includes('bridge') ? await createBridge({ config, log, orm }) : null;
    const openOrmRef = orm;
    return {
      config,
      orm,
      services,
      app,
      bridge,
      stop: async () => {
        await Promise.all([app.close(), bridge?.close()]);
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
