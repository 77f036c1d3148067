import 'reflect-metadata';
import { loadConfigOrExit } from './config';
import { createLogger } from './common/logger';
import { EmbeddedPostgresMissing } from './db/embedded-postgres';
import { DatabaseUnreachable } from './db/orm';
import { startRuntime } from './server/bootstrap';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const log = createLogger(config.logLevel, { apiKeyHeader: config.apiKeyHeader });
  let runtime;
  try {
    runtime = await startRuntime(config, log);
  } catch (err) {
    // Said in one line, like a bad configuration: the operator's to fix, not a bug to trace.
    if (err instanceof DatabaseUnreachable || err instanceof EmbeddedPostgresMissing) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  if (config.roles.includes('api')) {
    const port = await runtime.app.listen();
    log.info({ url: config.publicUrl, port, graphql: `${config.publicUrl}/graphql` }, 'API listening');
  }
  if (runtime.bridge) log.info({ port: await runtime.bridge.listen() }, 'chat bridge listening');
  if (config.metricsPort !== undefined)
    log.info(
      { port: await runtime.metricsServer.listen(config.metricsPort, config.host) },
      'metrics listening',
    );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    try {
      await runtime.stop();
      log.info('stopped cleanly');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
