import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import type { Logger } from '../common/logger';
import type { CallOriginator, OriginateCall } from './call-originator.port';
import {
  EslClient,
  EslCommandError,
  EslUnavailableError,
  type EslClientOptions,
  type EslMessage,
} from './esl.client';

const DIGITS = /^[0-9]{1,15}$/;

export interface FreeswitchOptions {
  /** The sofia gateway that carries calls to the outside world. */
  gateway: string;
  /** The directory domain of the users' extensions (`user/<ext>@<domain>`); FreeSWITCH's default when unset. */
  sipDomain?: string;
}

/**
 * The originate command of a click-to-call: ring the caller's extension (showing the destination),
 * then bridge it through the gateway to the destination (showing the caller's number). The cdr_*
 * channel variables tell the CDR which call this was (docs/telephony.md). Every piece is a digit
 * string, a UUID or a configuration value of a strict alphabet; anything else is refused here
 * too, so no request can add variables, legs or commands.
 */
export function originateCommand(call: OriginateCall, options: FreeswitchOptions): string {
  for (const [name, value] of Object.entries({
    extension: call.extension,
    phoneNumber: call.phoneNumber,
    source: call.source,
    destination: call.destination,
  })) {
    if (!DIGITS.test(value)) throw new Error(`originate: ${name} is not a digit string`);
  }
  if (!isUuid(call.callUuid)) throw new Error('originate: the call UUID is not a UUID');
  const callerLeg = [
    `origination_uuid=${call.callUuid}`,
    `origination_caller_id_number=${call.destination}`,
    `origination_caller_id_name=${call.destination}`,
    `cdr_call_direction=outbound`,
    `cdr_call_from=${call.source}`,
    `cdr_call_to=${call.destination}`,
    `cdr_extension=${call.extension}`,
    `cdr_didnumber=${call.phoneNumber}`,
  ].join(',');
  const user = `user/${call.extension}${options.sipDomain ? `@${options.sipDomain}` : ''}`;
  const outside = `{origination_caller_id_number=${call.phoneNumber}}sofia/gateway/${options.gateway}/${call.destination}`;
  return `originate {${callerLeg}}${user} &bridge(${outside})`;
}

/** Places calls with `bgapi originate` over FreeSWITCH's event socket. */
export class FreeswitchOriginator implements CallOriginator {
  private readonly esl: EslClient;

  constructor(
    connection: Omit<EslClientOptions, 'events' | 'onEvent' | 'log'>,
    private readonly options: FreeswitchOptions,
    private readonly log: Logger,
  ) {
    this.esl = new EslClient({
      ...connection,
      events: ['BACKGROUND_JOB'],
      onEvent: (event) => this.onEvent(event),
      log,
    });
    this.esl.start();
  }

  async originate(call: OriginateCall): Promise<void> {
    try {
      // The Job-UUID is the call's UUID, so that the BACKGROUND_JOB result names the call.
      await this.esl.bgapi(originateCommand(call, this.options), call.callUuid);
    } catch (err) {
      if (err instanceof EslUnavailableError) {
        const retryAfter =
          err.retryAfterMs === undefined ? undefined : Math.max(1, Math.ceil(err.retryAfterMs / 1000));
        throw new AppError('UNAVAILABLE', err.message, undefined, retryAfter);
      }
      if (err instanceof EslCommandError) throw new AppError('BAD_GATEWAY', err.message);
      throw err;
    }
  }

  close(): Promise<void> {
    return this.esl.close();
  }

  /** The outcome of an originate (the caller answered, or why not) is only logged. */
  private onEvent(event: EslMessage): void {
    if (event.headers['Event-Name'] !== 'BACKGROUND_JOB') return;
    const callUuid = event.headers['Job-UUID'];
    const result = event.body.trim();
    if (result.startsWith('+OK')) this.log.info({ callUuid }, 'click-to-call: the caller answered');
    else this.log.warn({ callUuid, result }, 'click-to-call: the call was not set up');
  }
}
