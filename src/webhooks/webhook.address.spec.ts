import { assertReachable, isPrivateAddress, parseWebhookUrl } from './webhook.address';

describe('isPrivateAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.100.100.200',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fe80::1%eth0',
    'fc00::1',
    'fd00:ec2::254',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '64:ff9b::a9fe:a9fe',
    '2002:7f00:0001::1',
    '::127.0.0.1',
    '2001:db8::1',
    'not an address',
  ])('refuses %s', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
  ])('allows %s', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });
});

describe('parseWebhookUrl', () => {
  const strict = { allowPrivate: [], allowHttp: false };
  it('takes https URLs only, unless http is allowed', () => {
    expect(parseWebhookUrl('https://example.com/hook', strict).host).toBe('example.com');
    expect(() => parseWebhookUrl('http://example.com/hook', strict)).toThrow(/https/);
    expect(parseWebhookUrl('http://example.com/hook', { ...strict, allowHttp: true }).protocol).toBe('http:');
  });

  it.each([
    'ftp://example.com/',
    'example.com/hook',
    'https://user:pw@example.com/',
    `https://example.com/${'a'.repeat(2048)}`,
  ])('refuses %j', (text) => {
    expect(() => parseWebhookUrl(text, { ...strict, allowHttp: true })).toThrow(
      expect.objectContaining({ code: 'VALIDATION_FAILED' }),
    );
  });
});

describe('assertReachable', () => {
  const strict = { allowPrivate: [], allowHttp: true };
  it.each([
    'http://127.0.0.1/',
    'http://localhost/',
    'http://[::1]:8080/',
    'http://169.254.169.254/latest/meta-data',
    'http://[::ffff:127.0.0.1]/',
  ])('refuses %s', async (text) => {
    await expect(assertReachable(new URL(text), strict)).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('allows exactly the host:port entries of WEBHOOK_ALLOW_PRIVATE', async () => {
    const policy = { allowPrivate: ['127.0.0.1:4000', '[::1]:4001'], allowHttp: true };
    await expect(assertReachable(new URL('http://127.0.0.1:4000/'), policy)).resolves.toBeUndefined();
    await expect(assertReachable(new URL('http://[::1]:4001/'), policy)).resolves.toBeUndefined();
    // By the address a name resolves to, with the same port.
    await expect(
      assertReachable(new URL('http://localhost:4000/'), {
        ...policy,
        allowPrivate: ['127.0.0.1:4000', '[::1]:4000'],
      }),
    ).resolves.toBeUndefined();
    await expect(assertReachable(new URL('http://127.0.0.1:4001/'), policy)).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });
    await expect(assertReachable(new URL('http://127.0.0.2:4000/'), policy)).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });
  });
});
