import { originateCommand } from './freeswitch.originator';

const call = {
  callUuid: '0b9c4c1e-3a7e-4f2b-9a51-0c2d1e6f7a88',
  extension: '1000',
  phoneNumber: '15550001000',
  source: '1000',
  destination: '4930123456',
};

describe('originateCommand', () => {
  it('rings the extension, then bridges through the gateway', () => {
    expect(originateCommand(call, { gateway: 'pstn' })).toBe(
      'originate {origination_uuid=0b9c4c1e-3a7e-4f2b-9a51-0c2d1e6f7a88,origination_caller_id_number=4930123456,' +
        'origination_caller_id_name=4930123456,cdr_call_direction=outbound,cdr_call_from=1000,cdr_call_to=4930123456,' +
        'cdr_extension=1000,cdr_didnumber=15550001000}user/1000 ' +
        '&bridge({origination_caller_id_number=15550001000}sofia/gateway/pstn/4930123456)',
    );
    expect(originateCommand(call, { gateway: 'pstn', sipDomain: 'pbx.example.com' })).toContain(
      '}user/1000@pbx.example.com &bridge(',
    );
  });

  it.each([
    ['destination', '4930,ignore_early_media=true'],
    ['destination', '4930}user/666'],
    ['source', '1000\nbgapi'],
    ['extension', '1000 &park()'],
    ['phoneNumber', ''],
    ['callUuid', 'not-a-uuid'],
  ])('refuses a %s of %j even if it got this far', (field, value) => {
    expect(() => originateCommand({ ...call, [field]: value }, { gateway: 'pstn' })).toThrow(/originate/);
  });
});
