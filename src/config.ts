import { existsSync } from 'node:fs';
import path from 'node:path';
import { bridgeConfig, type BridgeConfig } from './config/config.bridge';
import { executorConfig, type ExecutorConfig } from './config/config.executors';
export type { GovernanceConfig } from './config/config.governance';
import { governanceConfig, type GovernanceSettings } from './config/config.governance';
import { identityConfig, type IdentityConfig } from './config/config.identity';
import { ConfigError, Parser, type Env } from './config/config.parser';
import { serverConfig, type ServerConfig } from './config/config.server';
import { telephonyConfig, type TelephonyConfig } from './config/config.telephony';
import { webhookConfig, type WebhookConfig } from './config/config.webhooks';

/**
 * The one place that reads process.env. Everything else receives a frozen Config. Each area's
 * names, defaults and checks are in `src/config/config.<area>.ts`, which parse the environment
 * handed to them and never read process.env themselves.
 */

export { ConfigError, MAX_POOL_ENTRIES, MAX_POOL_RANGE_SIZE, type NumberRange } from './config/config.parser';
export type { Role } from './config/config.server';
export {
  CLUSTER_WORKER_CONCURRENCY,
  SLURM_CONTAINER_RUNTIMES,
  type KubernetesConfig,
  type SlurmContainerRuntime,
} from './config/config.executors';

export interface Config
  extends
    ServerConfig,
    IdentityConfig,
    ExecutorConfig,
    GovernanceSettings,
    TelephonyConfig,
    BridgeConfig,
    WebhookConfig {}

export function loadConfig(env: Env = readProcessEnv()): Config {
  const p = new Parser(env);
  const server = serverConfig(p);
  const config: Config = {
    ...server,
    ...identityConfig(p),
    ...executorConfig(p, server),
    ...governanceConfig(p),
    ...telephonyConfig(p),
    ...bridgeConfig(p, server),
    ...webhookConfig(p),
  };
  if (p.problems.length) throw new ConfigError(p.problems);
  return Object.freeze(config);
}

/** `loadConfig` for entry points (the service, scripts): a bad configuration is printed, exit 2. */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    process.exit(2);
  }
}

/** Reads `.env` from the working directory (if present) below the real environment. */
function readProcessEnv(): Env {
  const file = path.resolve('.env');
  if (existsSync(file)) process.loadEnvFile(file);
  return process.env;
}
