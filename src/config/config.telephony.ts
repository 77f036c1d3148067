import type { NumberRange, Parser } from './config.parser';

/** Telephony: the number pools, FreeSWITCH's event socket and its CDRs (docs/telephony.md). */

export interface TelephonyConfig {
  telephonyNumbers: readonly NumberRange[];
  telephonyExtensions: readonly NumberRange[];
  telephonySipDomain: string | undefined;
  telephonyRecordingsUrl: string | undefined;
  telephonyRecordingsDir: string;
  telephonyProviderId: number;
  telephonyCdrUsername: string;
  telephonyCdrPassword: string | undefined;
  telephonyCallLinkPerMinute: number;
  freeswitchEslHost: string | undefined;
  freeswitchEslPort: number;
  freeswitchEslPassword: string;
  freeswitchGateway: string | undefined;
  freeswitchEslMaxBackoffMs: number;
}

export function telephonyConfig(p: Parser): TelephonyConfig {
  const freeswitchEslHost = p.matching(
    'FREESWITCH_ESL_HOST',
    /^[\w.:[\]-]{1,253}$/,
    'a host name or address',
  );
  // The gateway and the domain are written into originate commands: a strict alphabet.
  const freeswitchGateway = p.matching(
    'FREESWITCH_GATEWAY',
    /^[\w.-]{1,64}$/,
    'a gateway name ([A-Za-z0-9_.-])',
  );
  if (freeswitchEslHost && !freeswitchGateway && !p.raw('FREESWITCH_GATEWAY'))
    p.problems.push('FREESWITCH_GATEWAY: required when FREESWITCH_ESL_HOST is set');
  return {
    telephonyNumbers: p.ranges('TELEPHONY_NUMBERS'),
    telephonyExtensions: p.ranges('TELEPHONY_EXTENSIONS', '1000-8999'),
    telephonySipDomain: p.matching('TELEPHONY_SIP_DOMAIN', /^[A-Za-z0-9.-]{1,253}$/, 'a domain name'),
    telephonyRecordingsUrl: p.url('TELEPHONY_RECORDINGS_URL', undefined),
    telephonyRecordingsDir: p
      .str('TELEPHONY_RECORDINGS_DIR', '/var/lib/freeswitch/recordings')
      .replace(/\/+$/, ''),
    telephonyProviderId: p.int('TELEPHONY_PROVIDER_ID', 1, 0, 2147483647),
    telephonyCdrUsername:
      p.matching('TELEPHONY_CDR_USERNAME', /^[^:\s]{1,128}$/, 'a user name without colons or spaces') ??
      'freeswitch',
    telephonyCdrPassword: p.raw('TELEPHONY_CDR_PASSWORD'),
    telephonyCallLinkPerMinute: p.int('TELEPHONY_CALL_LINK_PER_MINUTE', 10, 1, 100000),
    freeswitchEslHost,
    freeswitchEslPort: p.int('FREESWITCH_ESL_PORT', 8021, 1, 65535),
    // Sent as `auth <password>`: one line.
    freeswitchEslPassword:
      p.matching('FREESWITCH_ESL_PASSWORD', /^[^\r\n]{1,256}$/, 'a password on one line') ?? 'ClueCon',
    freeswitchGateway,
    freeswitchEslMaxBackoffMs: p.int('FREESWITCH_ESL_MAX_BACKOFF_MS', 30000, 10, 600000),
  };
}
