import type { Parser } from './config.parser';
import type { Role } from './config.server';

/** The chat bridge: its listener, the Matrix homeserver, the processes it runs, and the sealing key. */

export interface BridgeConfig {
  bridgePort: number;
  /** The chat bridge's Matrix homeserver (Synapse or Dendrite); unset: user creation answers 503. */
  matrixHomeserverUrl: string | undefined;
  matrixRegistrationSharedSecret: string | undefined;
  /** The homeserver's server name (the part after `:` in user ids); answered as `Hostname`. */
  matrixServerName: string | undefined;
  dendriteBin: string | undefined;
  matterbridgeBin: string | undefined;
  /**
   * The service's AES-256-GCM sealing key (SEALING_KEY, or its older name BRIDGE_SECRET_KEY): the
   * bridge's tokens and owners' secrets. Unset outside production: generated under DATA_DIR.
   */
  sealingKey: Buffer | undefined;
  bridgeLoginMaxFailures: number;
  bridgeLoginMaxFailuresPerIp: number;
  bridgeLoginWindowSeconds: number;
}

export function bridgeConfig(
  p: Parser,
  { nodeEnv, roles }: { nodeEnv: string; roles: readonly Role[] },
): BridgeConfig {
  const matrixHomeserverUrl = p.url('MATRIX_HOMESERVER_URL', undefined);
  const matrixRegistrationSharedSecret = p.raw('MATRIX_REGISTRATION_SHARED_SECRET');
  if (matrixHomeserverUrl && !matrixRegistrationSharedSecret)
    p.problems.push('MATRIX_REGISTRATION_SHARED_SECRET: required with MATRIX_HOMESERVER_URL');
  const matrixServerName = p.raw('MATRIX_SERVER_NAME')?.toLowerCase();
  if (matrixServerName && !/^[a-z0-9.-]+(:\d{1,5})?$/.test(matrixServerName))
    p.problems.push(
      `MATRIX_SERVER_NAME: expected a host name with an optional port, got "${matrixServerName}"`,
    );
  // One key under two names: BRIDGE_SECRET_KEY came first, when only the bridge sealed anything.
  const bridgeSecretKey = p.key32('BRIDGE_SECRET_KEY');
  const sealingKey = p.key32('SEALING_KEY') ?? bridgeSecretKey;
  if (p.raw('SEALING_KEY') && bridgeSecretKey && !sealingKey?.equals(bridgeSecretKey))
    p.problems.push('SEALING_KEY: differs from BRIDGE_SECRET_KEY, its older name; set one of them');
  if (nodeEnv === 'production' && roles.includes('bridge') && !sealingKey)
    p.problems.push('SEALING_KEY (or BRIDGE_SECRET_KEY): required in production when the bridge role runs');
  return {
    bridgePort: p.int('BRIDGE_PORT', 8081, 0, 65535),
    matrixHomeserverUrl,
    matrixRegistrationSharedSecret,
    matrixServerName:
      matrixServerName ?? (matrixHomeserverUrl ? new URL(matrixHomeserverUrl).host.toLowerCase() : undefined),
    dendriteBin: p.executable('DENDRITE_BIN'),
    matterbridgeBin: p.executable('MATTERBRIDGE_BIN'),
    sealingKey,
    bridgeLoginMaxFailures: p.int('BRIDGE_LOGIN_MAX_FAILURES', 5, 1, 1000),
    bridgeLoginMaxFailuresPerIp: p.int('BRIDGE_LOGIN_MAX_FAILURES_PER_IP', 20, 1, 100000),
    bridgeLoginWindowSeconds: p.int('BRIDGE_LOGIN_WINDOW_SECONDS', 900, 1, 86400),
  };
}
