import type { Config } from '../config';
import { AppError } from '../common/errors';
import type { Logger } from '../common/logger';
import type { CallOriginator } from './call-originator.port';
import { FreeswitchOriginator } from './freeswitch.originator';

/** Without a PBX configured, click-to-call answers 503 with the reason. */
class UnconfiguredOriginator implements CallOriginator {
  async originate(): Promise<void> {
    throw new AppError(
      'UNAVAILABLE',
      'click-to-call is not configured on this server (FREESWITCH_ESL_HOST is not set)',
    );
  }

  async close(): Promise<void> {}
}

export function createCallOriginator(config: Config, log: Logger): CallOriginator {
  if (!config.freeswitchEslHost || !config.freeswitchGateway) return new UnconfiguredOriginator();
  return new FreeswitchOriginator(
    {
      host: config.freeswitchEslHost,
      port: config.freeswitchEslPort,
      password: config.freeswitchEslPassword,
      maxBackoffMs: config.freeswitchEslMaxBackoffMs,
    },
    { gateway: config.freeswitchGateway, sipDomain: config.telephonySipDomain },
    log,
  );
}
