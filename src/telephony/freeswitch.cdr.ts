import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import type { CallRecordInput } from './telephony.service';

/**
 * FreeSWITCH's mod_json_cdr: the body it posts after each call leg, and how its channel variables
 * become a call record. The mapping is documented in docs/telephony.md.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Turns text that is JSON but for its string contents back into JSON: raw control characters
 * are escaped, a quote that is not followed by what may follow a string's end is taken as part
 * of the string, and a backslash that starts no JSON escape is taken literally.
 */
export function repairJsonStrings(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (!inString) {
      out += c;
      inString = c === '"';
    } else if (c === '\\') {
      const next = text[i + 1] ?? '';
      const escape =
        next === 'u'
          ? /^u[0-9a-fA-F]{4}/.test(text.slice(i + 1, i + 6))
          : '"\\/bfnrt'.includes(next) && next !== '';
      out += escape ? c + next : '\\\\';
      if (escape) i++;
    } else if (c === '"') {
      const after = /^\s*(.?)/.exec(text.slice(i + 1, i + 64))![1];
      inString = !(after === '' || ',:}]'.includes(after));
      out += inString ? '\\"' : c;
    } else if (c < ' ') {
      out += `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
    } else {
      out += c;
    }
  }
  return out;
}

function parseJson(text: string, repair = false): Json {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    if (repair) return parseJson(repairJsonStrings(text));
    throw new AppError('BAD_REQUEST', 'the CDR is not valid JSON');
  }
  if (!isObject(parsed) || !isObject(parsed.variables))
    throw new AppError('BAD_REQUEST', 'the CDR has no "variables" object');
  return parsed;
}

/**
 * The CDR of a request body, in each of mod_json_cdr's `encode` settings: `false` posts the JSON
 * itself (application/json), `true` posts `cdr=<url-encoded JSON>` and `base64` posts
 * `cdr=<base64 JSON>` (application/x-www-form-base64-encoded).
 */
export function parseCdrBody(contentType: string | undefined, body: Buffer): Json {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  const text = body.toString('utf8');
  if (type === 'application/json' || type.endsWith('+json')) return parseJson(text);
  if (type === 'application/x-www-form-urlencoded') {
    const cdr = new URLSearchParams(text).get('cdr');
    if (cdr === null) throw new AppError('BAD_REQUEST', 'the form has no "cdr" field');
    // With encode-values on, FreeSWITCH keeps the values' %XX escapes as they are when it encodes
    // the whole document, so decoding the form decodes the values too: their quotes, backslashes
    // and line breaks (SDP variables) land raw inside JSON strings and are repaired.
    return parseJson(cdr, true);
  }
  if (type === 'application/x-www-form-base64-encoded') {
    const match = /(?:^|&)cdr=([^&]*)/.exec(text);
    if (!match) throw new AppError('BAD_REQUEST', 'the form has no "cdr" field');
    return parseJson(Buffer.from(decodeValue(match[1]), 'base64').toString('utf8'));
  }
  throw new AppError(
    'UNSUPPORTED_MEDIA_TYPE',
    'send the CDR as application/json, application/x-www-form-urlencoded or application/x-www-form-base64-encoded',
  );
}

const TEXT_LIMIT = 255;
const DIGITS = /^[0-9]{1,15}$/;

/** Channel variable values are URL-encoded unless mod_json_cdr's encode-values is off. */
function decodeValue(value: string): string {
  if (!/%[0-9A-Fa-f]{2}/.test(value)) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** The leg's first callflow entry (later ones come from transfers): what was dialled, by whom. */
function originalCallflow(cdr: Json): { profile: Json; times: Json } {
  // Older versions repeat a "callflow" key (JSON.parse keeps the last, the first profile); newer
  // ones give an array, newest first.
  const entry = Array.isArray(cdr.callflow) ? cdr.callflow.at(-1) : cdr.callflow;
  if (!isObject(entry)) return { profile: {}, times: {} };
  return {
    profile: isObject(entry.caller_profile) ? entry.caller_profile : {},
    times: isObject(entry.times) ? entry.times : {},
  };
}

function epochOf(micro: string | undefined, seconds?: string): Date | null {
  if (micro && /^\d{1,17}$/.test(micro) && Number(micro) > 0)
    return new Date(Math.floor(Number(micro) / 1000));
  if (seconds && /^\d{1,11}$/.test(seconds) && Number(seconds) > 0) return new Date(Number(seconds) * 1000);
  return null;
}

/** Maps one leg's CDR onto a call record; `uuidHint` is the `uuid` query parameter FreeSWITCH adds. */
export function callFromCdr(cdr: Json, uuidHint?: string, receivedAt = new Date()): CallRecordInput {
  const variables = cdr.variables as Json;
  const { profile, times } = originalCallflow(cdr);
  const pick = (source: Json, name: string, decode: boolean): string | undefined => {
    const raw = source[name];
    if (typeof raw !== 'string' && typeof raw !== 'number') return undefined;
    const value = (decode ? decodeValue(String(raw)) : String(raw)).trim();
    return value === '' ? undefined : value;
  };
  const first = (...names: string[]): string | undefined => {
    for (const name of names) {
      const [source, key] = name.startsWith('profile.') ? [profile, name.slice(8)] : [variables, name];
      const value = pick(source, key, source === variables);
      if (value !== undefined) return value;
    }
    return undefined;
  };
  const digits = (...names: string[]) => {
    const value = first(...names);
    return value !== undefined && DIGITS.test(value) ? value : null;
  };
  const text = (...names: string[]) => (first(...names) ?? '').slice(0, TEXT_LIMIT);

  const callUuid = first('uuid', 'profile.uuid', 'call_uuid') ?? uuidHint;
  if (!isUuid(callUuid)) throw AppError.validation({ uuid: 'the CDR names no call UUID' });

  const callDirection = text('cdr_call_direction', 'call_direction', 'direction');
  const callTo = text('cdr_call_to', 'profile.destination_number', 'destination_number', 'sip_to_user');
  const callFrom = text('cdr_call_from', 'profile.caller_id_number', 'caller_id_number', 'sip_from_user');
  // The DID of the call: what an inbound call dialled, what an outbound one presented (no `+`).
  const didFallback = (callDirection === 'inbound' ? callTo : first('effective_caller_id_number'))?.replace(
    /^\+/,
    '',
  );

  const createdAt =
    epochOf(first('start_uepoch'), first('start_epoch')) ??
    epochOf(pick(times, 'created_time', false)) ??
    receivedAt;
  const startedAt =
    epochOf(first('answer_uepoch'), first('answer_epoch')) ??
    epochOf(pick(times, 'answered_time', false)) ??
    createdAt;
  const billsec = first('billsec');

  const [recordPath, recordName] = [first('record_path'), first('record_name')];
  const recordingPath =
    first('cdr_recording') ?? (recordPath && recordName ? `${recordPath}/${recordName}` : undefined);
  const recorded = ['record_ms', 'record_seconds', 'record_samples'].some((n) => Number(first(n)) > 0);

  return {
    callUuid: callUuid.toLowerCase(),
    callFrom,
    callTo,
    extension: digits('cdr_extension', 'user_name', 'dialed_user'),
    didnumber: digits('cdr_didnumber') ?? (didFallback && DIGITS.test(didFallback) ? didFallback : null),
    domain: first('domain_name', 'dialed_domain')?.slice(0, TEXT_LIMIT) ?? null,
    hangupCause: text('hangup_cause'),
    callDirection,
    billDuration: billsec && /^\d{1,9}$/.test(billsec) ? Number(billsec) : 0,
    recordingPath: recordingPath && recorded ? recordingPath.slice(0, 2048) : null,
    createdAt,
    startedAt,
  };
}
