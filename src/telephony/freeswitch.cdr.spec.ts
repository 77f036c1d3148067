import { randomUUID } from 'node:crypto';
import { cdrBody, clickToCallLeg, jsonCdr, type Leg } from '../../test/helpers/json-cdr';
import { AppError } from '../common/errors';
import { callFromCdr, parseCdrBody, repairJsonStrings } from './freeswitch.cdr';

const leg = (over: Partial<Leg> = {}): Leg => ({
  uuid: randomUUID(),
  direction: 'inbound',
  callerIdNumber: '4930111222',
  destinationNumber: '15550001000',
  start: 1795349703,
  ...over,
});

const parse = (cdr: Record<string, unknown>, encode: 'false' | 'true' | 'base64') => {
  const { type, body } = cdrBody(cdr, encode);
  return parseCdrBody(`${type}; charset=utf-8`, Buffer.from(body));
};

describe('parseCdrBody', () => {
  it('reads the three mod_json_cdr encodings into the same document', () => {
    const cdr = jsonCdr(
      leg({ variables: { sip_full_from: '"Ext \\ 1000" <sip:1000@pbx>;tag=x', odd: 'a{b}|c%d' } }),
    );
    const expected = JSON.parse(JSON.stringify(cdr));
    expect(parse(cdr, 'false')).toEqual(expected);
    expect(parse(cdr, 'base64')).toEqual(expected);
    // The form variant decodes the values once more (FreeSWITCH does not escape their escapes),
    // which callFromCdr's own decoding leaves unchanged.
    const form = parse(cdr, 'true');
    expect(callFromCdr(form)).toEqual(callFromCdr(expected));
    expect((form.variables as Record<string, string>).sip_full_from).toBe(
      '"Ext \\ 1000" <sip:1000@pbx>;tag=x',
    );
    expect((form.variables as Record<string, string>).switch_r_sdp).toContain('\r\nm=audio 24580');
  });

  it('refuses what is not a CDR', () => {
    const code = (type: string, body: string) => {
      try {
        parseCdrBody(type, Buffer.from(body));
      } catch (err) {
        return (err as AppError).code;
      }
      return 'parsed';
    };
    expect(code('application/json', 'nope')).toBe('BAD_REQUEST');
    expect(code('application/json', '{"variables": []}')).toBe('BAD_REQUEST');
    expect(code('application/x-www-form-urlencoded', 'cdr=%7B%22a')).toBe('BAD_REQUEST');
    expect(code('application/x-www-form-base64-encoded', 'x=1')).toBe('BAD_REQUEST');
    expect(code('application/x-www-form-base64-encoded', 'cdr=%%%')).toBe('BAD_REQUEST');
    expect(code('text/xml', '<cdr/>')).toBe('UNSUPPORTED_MEDIA_TYPE');
  });
});

describe('repairJsonStrings', () => {
  it('escapes what landed raw inside strings and leaves valid JSON as it is', () => {
    expect(JSON.parse(repairJsonStrings('{"a":"say "hi" now","b":"x\r\ny"}'))).toEqual({
      a: 'say "hi" now',
      b: 'x\r\ny',
    });
    expect(JSON.parse(repairJsonStrings('{"p":"C:\\temp\\x","q":"\\"ok\\" \\u0041"}'))).toEqual({
      p: 'C:\temp\\x',
      q: '"ok" A',
    });
    const valid = JSON.stringify({ a: [1, 'two', { three: 'f"o\\o\n' }] });
    expect(repairJsonStrings(valid)).toBe(valid);
  });
});

describe('callFromCdr', () => {
  it('maps a click-to-call leg from its cdr_* variables', () => {
    const uuid = randomUUID();
    const call = callFromCdr(
      jsonCdr(
        clickToCallLeg({
          uuid,
          extension: '1000',
          number: '15550001000',
          destination: '4930123456',
          start: 1795349703,
          billsec: 61,
        }),
      ),
    );
    expect(call).toEqual({
      callUuid: uuid,
      callFrom: '1000',
      callTo: '4930123456',
      extension: '1000',
      didnumber: '15550001000',
      domain: 'pbx.example.com',
      hangupCause: 'NORMAL_CLEARING',
      callDirection: 'outbound',
      billDuration: 61,
      recordingPath: `/var/lib/freeswitch/recordings/2026/11/22/${uuid}.wav`,
      createdAt: new Date('2026-11-22T12:15:03.123Z'),
      startedAt: new Date('2026-11-22T12:15:07.123Z'),
    });
  });

  it('falls back to FreeSWITCH’s own variables and caller profile', () => {
    const inbound = callFromCdr(jsonCdr(leg({ variables: { domain_name: 'pbx.example.com' } })));
    expect(inbound).toMatchObject({
      callFrom: '4930111222',
      callTo: '15550001000',
      callDirection: 'inbound',
      didnumber: '15550001000',
      extension: null,
      recordingPath: null,
    });
    const fromExtension = callFromCdr(
      jsonCdr(
        leg({
          callerIdNumber: '1001',
          destinationNumber: '4940555',
          variables: {
            user_name: '1001',
            call_direction: 'outbound',
            effective_caller_id_number: '15550001001',
          },
        }),
      ),
    );
    expect(fromExtension).toMatchObject({
      extension: '1001',
      didnumber: '15550001001',
      callDirection: 'outbound',
    });
  });

  it('treats a call never answered and a recording never written', () => {
    const call = callFromCdr(
      jsonCdr(
        leg({
          ringSeconds: null,
          hangupCause: 'NO_ANSWER',
          variables: { record_path: '/rec', record_name: 'x.wav', record_ms: '0' },
        }),
      ),
    );
    expect(call.billDuration).toBe(0);
    expect(call.startedAt).toEqual(call.createdAt);
    expect(call.hangupCause).toBe('NO_ANSWER');
    expect(call.recordingPath).toBeNull();
  });

  it('reads the older single-object callflow and epochs in seconds', () => {
    const uuid = randomUUID();
    const call = callFromCdr(
      {
        variables: { start_epoch: '1795349703', answer_epoch: '1795349705', billsec: '7' },
        callflow: { caller_profile: { uuid, caller_id_number: '1000', destination_number: '1001' } },
      },
      undefined,
    );
    expect(call).toMatchObject({
      callUuid: uuid,
      callFrom: '1000',
      callTo: '1001',
      billDuration: 7,
      createdAt: new Date('2026-11-22T12:15:03Z'),
      startedAt: new Date('2026-11-22T12:15:05Z'),
    });
  });

  it('needs a call UUID, from the CDR or the query, and ignores numbers that are not digits', () => {
    expect(() => callFromCdr({ variables: {} })).toThrow(AppError);
    const uuid = randomUUID();
    const received = new Date('2026-01-01T00:00:00Z');
    const call = callFromCdr(
      { variables: { cdr_extension: '10%2000', cdr_didnumber: '+1555' } },
      uuid,
      received,
    );
    expect(call).toMatchObject({
      callUuid: uuid,
      extension: null,
      didnumber: null,
      createdAt: received,
      domain: null,
    });
  });
});
