import { randomUUID } from 'node:crypto';

/**
 * CDRs as FreeSWITCH's mod_json_cdr posts them (1.10, default `encode-values=true`): channel
 * variables URL-encoded by switch_url_encode, caller profiles and times raw, one callflow entry
 * per caller profile (newest first).
 */

const UNSAFE = new Set(Buffer.from('\r\n #%&+:;<=>?@[\\]^`{|}"'));
const HEX = /^[0-9A-F]$/;

/** switch_url_encode: unsafe, control and non-ASCII bytes as %XX; an existing %XX is kept. */
export function fsUrlEncode(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    const keptEscape =
      b === 0x25 &&
      i + 2 < bytes.length &&
      HEX.test(String.fromCharCode(bytes[i + 1])) &&
      HEX.test(String.fromCharCode(bytes[i + 2]));
    if (!keptEscape && (b < 0x20 || b > 0x7e || UNSAFE.has(b)))
      out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    else out += String.fromCharCode(b);
  }
  return out;
}

export interface Leg {
  uuid?: string;
  direction: 'inbound' | 'outbound';
  callerIdNumber: string;
  destinationNumber: string;
  /** Seconds since the epoch at which the channel was created. */
  start: number;
  /** Seconds of ringing before answer; null when never answered. */
  ringSeconds?: number | null;
  billsec?: number;
  hangupCause?: string;
  /** Extra channel variables (raw values; they are encoded like the rest). */
  variables?: Record<string, string>;
}

export function jsonCdr(leg: Leg): Record<string, unknown> {
  const uuid = leg.uuid ?? randomUUID();
  const ring = leg.ringSeconds === undefined ? 4 : leg.ringSeconds;
  const billsec = ring === null ? 0 : (leg.billsec ?? 42);
  const startUs = leg.start * 1_000_000 + 123_456;
  const answerUs = ring === null ? 0 : startUs + ring * 1_000_000;
  const endUs = (ring === null ? startUs + 30_000_000 : answerUs) + billsec * 1_000_000;
  const stamp = (us: number) => (us ? new Date(us / 1000).toISOString().slice(0, 19).replace('T', ' ') : '');
  const sdp = [
    'v=0',
    'o=FreeSWITCH 1795300000 1795300001 IN IP4 10.0.0.5',
    's=FreeSWITCH',
    'c=IN IP4 10.0.0.5',
    't=0 0',
    'm=audio 24580 RTP/AVP 0 101',
    'a=rtpmap:0 PCMU/8000',
    'a=rtpmap:101 telephone-event/8000',
    'a=fmtp:101 0-16',
    'a=ptime:20',
    '',
  ].join('\r\n');
  const raw: Record<string, string> = {
    direction: leg.direction,
    uuid,
    session_id: '17',
    sip_from_user: leg.callerIdNumber,
    sip_from_uri: `${leg.callerIdNumber}@pbx.example.com`,
    sip_from_host: 'pbx.example.com',
    sip_from_display: `Extension ${leg.callerIdNumber}`,
    sip_full_from: `"Extension ${leg.callerIdNumber}" <sip:${leg.callerIdNumber}@pbx.example.com>;tag=8a6Hm2BQvg3tF`,
    sip_to_user: leg.destinationNumber,
    channel_name: `sofia/internal/${leg.callerIdNumber}@10.0.0.20:5060`,
    sip_call_id: `${randomUUID()}@10.0.0.20`,
    switch_r_sdp: sdp,
    rtp_local_sdp_str: sdp,
    call_uuid: uuid,
    hangup_cause: leg.hangupCause ?? 'NORMAL_CLEARING',
    hangup_cause_q850: '16',
    digits_dialed: 'none',
    start_stamp: stamp(startUs),
    profile_start_stamp: stamp(startUs),
    answer_stamp: stamp(answerUs),
    progress_media_stamp: '',
    end_stamp: stamp(endUs),
    start_epoch: String(Math.floor(startUs / 1e6)),
    start_uepoch: String(startUs),
    answer_epoch: String(Math.floor(answerUs / 1e6)),
    answer_uepoch: String(answerUs),
    end_epoch: String(Math.floor(endUs / 1e6)),
    end_uepoch: String(endUs),
    duration: String(Math.round((endUs - startUs) / 1e6)),
    mduration: String(Math.round((endUs - startUs) / 1e3)),
    billsec: String(billsec),
    billmsec: String(billsec * 1000),
    progresssec: '0',
    answersec: String(ring ?? 0),
    waitsec: String(ring ?? 0),
    flow_billsec: String(Math.round((endUs - startUs) / 1e6)),
    uduration: String(endUs - startUs),
    billusec: String(billsec * 1e6),
    ...leg.variables,
  };
  const variables = Object.fromEntries(
    Object.entries(raw)
      .filter(([, v]) => v !== '')
      .map(([k, v]) => [k, fsUrlEncode(v)]),
  );
  return {
    'core-uuid': 'c7bd1e44-5e1b-4f0e-a8a5-3a4c3b1f7d11',
    switchname: 'pbx1',
    channel_data: {
      state: 'CS_REPORTING',
      direction: leg.direction,
      state_number: '11',
      flags: '0=1;1=1;3=1;20=1;37=1;38=1;40=1;43=1;48=1;53=1;105=1;112=1;113=1;122=1;134=1',
      caps: '1=1;2=1;3=1;4=1;5=1;6=1',
    },
    callStats: {
      audio: {
        inbound: { raw_bytes: 340560, media_bytes: 340560, packet_count: 1980, jitter_packet_count: 0 },
        outbound: { raw_bytes: 340560, media_bytes: 340560, packet_count: 1980 },
      },
    },
    variables,
    app_log: {
      applications: [
        { app_name: 'set', app_data: 'hangup_after_bridge=true' },
        { app_name: 'bridge', app_data: `user/${leg.destinationNumber}@pbx.example.com` },
      ],
    },
    callflow: [
      {
        dialplan: 'XML',
        profile_index: '1',
        extension: {
          name: 'local_extension',
          number: leg.destinationNumber,
          applications: [{ app_name: 'bridge', app_data: `user/${leg.destinationNumber}@pbx.example.com` }],
        },
        caller_profile: {
          username: leg.callerIdNumber,
          dialplan: 'XML',
          caller_id_name: leg.callerIdNumber,
          ani: leg.callerIdNumber,
          aniii: '',
          caller_id_number: leg.callerIdNumber,
          network_addr: '10.0.0.20',
          rdnis: '',
          destination_number: leg.destinationNumber,
          uuid,
          source: 'mod_sofia',
          context: 'default',
          chan_name: `sofia/internal/${leg.callerIdNumber}@10.0.0.20:5060`,
        },
        times: {
          created_time: String(startUs),
          profile_created_time: String(startUs),
          progress_time: '0',
          progress_media_time: '0',
          answered_time: String(answerUs),
          bridged_time: String(answerUs),
          last_hold_time: '0',
          hold_accum_time: '0',
          hangup_time: String(endUs),
          resurrect_time: '0',
          transfer_time: '0',
        },
      },
    ],
  };
}

/**
 * The caller's leg of a click-to-call from `extension` (holding `number`) to `destination`, as the
 * service's originate sets it up, recorded by the dialplan for `billsec` seconds.
 */
export function clickToCallLeg(call: {
  uuid: string;
  extension: string;
  number: string;
  destination: string;
  start: number;
  billsec: number;
}): Leg {
  return {
    uuid: call.uuid,
    direction: 'outbound',
    callerIdNumber: call.destination,
    destinationNumber: call.extension,
    start: call.start,
    billsec: call.billsec,
    variables: {
      cdr_call_direction: 'outbound',
      cdr_call_from: call.extension,
      cdr_call_to: call.destination,
      cdr_extension: call.extension,
      cdr_didnumber: call.number,
      dialed_user: call.extension,
      dialed_domain: 'pbx.example.com',
      record_path: '/var/lib/freeswitch/recordings/2026/11/22',
      record_name: `${call.uuid}.wav`,
      record_ms: String(call.billsec * 1000),
      record_seconds: String(call.billsec),
    },
  };
}

/** The three bodies mod_json_cdr posts, by its `encode` setting, with their content types. */
export function cdrBody(cdr: Record<string, unknown>, encode: 'false' | 'true' | 'base64') {
  const json = JSON.stringify(cdr);
  if (encode === 'false') return { type: 'application/json', body: json };
  if (encode === 'true')
    return { type: 'application/x-www-form-urlencoded', body: `cdr=${fsUrlEncode(json)}` };
  return {
    type: 'application/x-www-form-base64-encoded',
    body: `cdr=${Buffer.from(json).toString('base64')}`,
  };
}
