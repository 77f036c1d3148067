import { lineRedactions, redactSecrets, secretRedactor } from './secret.redact';

describe('redactSecrets', () => {
  it('replaces every occurrence of every value by the secret name', () => {
    const text = 'token=hf_abc123 and again hf_abc123; key: LIC-9\n';
    expect(
      redactSecrets(text, [
        { name: 'HF_TOKEN', value: 'hf_abc123' },
        { name: 'LICENCE', value: 'LIC-9' },
      ]),
    ).toBe('token=[secret HF_TOKEN] and again [secret HF_TOKEN]; key: [secret LICENCE]\n');
  });

  it('replaces a value that contains another whole, whatever the order given', () => {
    const secrets = [
      { name: 'SHORT', value: 'abc' },
      { name: 'LONG', value: 'xxabcxx' },
    ];
    expect(redactSecrets('xxabcxx abc', secrets)).toBe('[secret LONG] [secret SHORT]');
    expect(redactSecrets('xxabcxx abc', [...secrets].reverse())).toBe('[secret LONG] [secret SHORT]');
  });

  it('treats values literally (regular expression characters, dollars) and never matches an empty value', () => {
    const secrets = [
      { name: 'RE', value: 'a.b*c$1(' },
      { name: 'EMPTY', value: '' },
    ];
    expect(redactSecrets('a.b*c$1( aXbbc', secrets)).toBe('[secret RE] aXbbc');
    expect(redactSecrets('nothing here', secrets)).toBe('nothing here');
  });

  it('does not search the replacement text again', () => {
    // A value equal to part of "[secret A]" must not mangle the marker written for another secret.
    expect(
      redactSecrets('s3cr3t', [
        { name: 'A', value: 's3cr3t' },
        { name: 'B', value: 'secret' },
      ]),
    ).toBe('[secret A]');
  });

  it('leaves text without secrets as it is', () => {
    expect(redactSecrets('plain', [])).toBe('plain');
    expect(redactSecrets('', [{ name: 'A', value: 'x' }])).toBe('');
  });
});

describe('lineRedactions', () => {
  it('adds each line of a multi-line value, so a value printed across lines is redacted line by line', () => {
    const key = { name: 'KEY', value: '-----BEGIN-----\nAAAABBBBCCCC\nDDDDEEEE\nx\n-----END-----' };
    const redact = secretRedactor(lineRedactions([key, { name: 'TOKEN', value: 'tok_123' }]));
    const printed = `${key.value}\nTOKEN=tok_123`.split('\n').map(redact);
    expect(printed).toEqual([
      '[secret KEY]',
      '[secret KEY]',
      '[secret KEY]',
      'x', // shorter than 4 characters: not redacted alone
      '[secret KEY]',
      'TOKEN=[secret TOKEN]',
    ]);
    expect(redact(key.value)).toBe('[secret KEY]');
  });
});
