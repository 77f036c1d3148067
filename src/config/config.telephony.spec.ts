import { loadConfig } from '../config';

describe('loadConfig', () => {
  describe('telephony', () => {
    it('has the documented defaults', () => {
      expect(loadConfig({})).toMatchObject({
        telephonyNumbers: [],
        telephonyExtensions: [{ from: 1000, to: 8999 }],
        telephonyRecordingsDir: '/var/lib/freeswitch/recordings',
        telephonyProviderId: 1,
        telephonyCdrUsername: 'freeswitch',
        telephonyCdrPassword: undefined,
        telephonyCallLinkPerMinute: 10,
        freeswitchEslHost: undefined,
        freeswitchEslPort: 8021,
        freeswitchEslPassword: 'ClueCon',
        freeswitchEslMaxBackoffMs: 30000,
      });
    });

    it('reads pools of ranges and single values, in the given order', () => {
      const c = loadConfig({
        TELEPHONY_NUMBERS: ' 15550001000-15550001999 , 15550002005,442071838750-442071838799',
        TELEPHONY_EXTENSIONS: '2000-2099,100',
      });
      expect(c.telephonyNumbers).toEqual([
        { from: 15550001000, to: 15550001999 },
        { from: 15550002005, to: 15550002005 },
        { from: 442071838750, to: 442071838799 },
      ]);
      expect(c.telephonyExtensions).toEqual([
        { from: 2000, to: 2099 },
        { from: 100, to: 100 },
      ]);
      expect(loadConfig({ TELEPHONY_NUMBERS: '999999999999999' }).telephonyNumbers).toEqual([
        { from: 999999999999999, to: 999999999999999 },
      ]);
    });

    it.each([
      ['letters', '1555000abc'],
      ['a plus', '+15550001000'],
      ['a leading zero', '0150-0199'],
      ['16 digits', '1234567890123456'],
      ['a reversed range', '2000-1000'],
      ['ends of different lengths', '100-2000'],
      ['a range too large', '10000000-19999999'],
      ['overlapping entries', '1000-1999,1500'],
      ['an open range', '1000-'],
    ])('refuses a pool with %s', (_name, value) => {
      expect(() => loadConfig({ TELEPHONY_NUMBERS: value })).toThrow(/TELEPHONY_NUMBERS/);
      expect(() => loadConfig({ TELEPHONY_EXTENSIONS: value })).toThrow(/TELEPHONY_EXTENSIONS/);
    });

    it('needs a gateway with an event socket host, and keeps originate values to strict alphabets', () => {
      expect(() => loadConfig({ FREESWITCH_ESL_HOST: 'pbx.internal' })).toThrow(
        /FREESWITCH_GATEWAY: required/,
      );
      const c = loadConfig({ FREESWITCH_ESL_HOST: 'pbx.internal', FREESWITCH_GATEWAY: 'carrier_1' });
      expect(c).toMatchObject({ freeswitchEslHost: 'pbx.internal', freeswitchGateway: 'carrier_1' });
      for (const [name, value] of [
        ['FREESWITCH_GATEWAY', 'pstn,foo=bar'],
        ['FREESWITCH_GATEWAY', 'pstn}x'],
        ['TELEPHONY_SIP_DOMAIN', 'pbx example'],
        ['TELEPHONY_SIP_DOMAIN', 'a,b'],
        ['TELEPHONY_CDR_USERNAME', 'free:switch'],
        ['FREESWITCH_ESL_PASSWORD', 'line\nbreak'],
        ['TELEPHONY_CALL_LINK_PER_MINUTE', '0'],
        ['TELEPHONY_RECORDINGS_URL', 'ftp://x'],
      ]) {
        expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(name));
      }
    });
  });
});
