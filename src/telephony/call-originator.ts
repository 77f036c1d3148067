import type { Config } from '../config';
import { AppError } from '../common/errors';
import type { Logger } from '../common/logger';
import { FreeswitchOriginator } from './freeswitch.originator';

/** A click-to-call: ring the user's extension, then connect it to the destination. */
export interface OriginateCall {
  /** Pre-assigned UUID of the call (the caller's leg); it names the call record later. */
  callUuid: string;
  /** The caller's extension and phone number (digit strings). */
  extension: string;
  phoneNumber: string;
  /** What the caller asked for: its own number or extension, and the number to call. */
  source: string;
  destination: string;
}

/** The port to the PBX that places calls. */
export interface CallOriginator {
  /** Resolves once the PBX accepted the call; throws UNAVAILABLE when the PBX cannot be reached. */
  originate(call: OriginateCall): Promise<void>;
  close(): Promise<void>;
}

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
