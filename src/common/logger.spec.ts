import { createLogger, redactUrl } from './logger';

function capture(apiKeyHeader = 'x-service-key') {
  const lines: string[] = [];
  const log = createLogger('info', {
    apiKeyHeader,
    destination: { write: (l: string) => void lines.push(l) },
  });
  return { log, text: () => lines.join('') };
}

describe('createLogger', () => {
  it('redacts credential headers of requests, the configured API key header included', () => {
    const { log, text } = capture('x-acme-key');
    log.info({
      req: {
        headers: {
          authorization: 'Bearer jwt-secret',
          cookie: 'auth_session=cookie-secret',
          'x-acme-key': 'acme-key-secret',
          'x-api-key': 'bridge-key-secret',
          accept: 'application/json',
        },
      },
      res: { headers: { 'set-cookie': 'auth_session=new-cookie-secret' } },
    });
    expect(text()).not.toMatch(/jwt-secret|cookie-secret|acme-key-secret|bridge-key-secret/);
    expect(text()).toContain('application/json');
  });

  it('redacts fields named like secrets, at the top and one level down', () => {
    const { log, text } = capture();
    log.info({
      password: 'pw-1',
      conf: { token: 'platform-token' },
      tokens: { access_token: 'at', refresh_token: 'rt' },
    });
    log.warn({ err: { secret: 'shh', message: 'kept' } }, 'failed');
    expect(text()).not.toMatch(/pw-1|platform-token|"at"|"rt"|shh/);
    expect(text()).toContain('kept');
  });
});

describe('redactUrl', () => {
  it('replaces the values of secret query parameters and keeps the rest', () => {
    expect(redactUrl('/api/v1/auth/callback?code=abc&state=def&x=1')).toBe(
      '/api/v1/auth/callback?code=%5Bredacted%5D&state=%5Bredacted%5D&x=1',
    );
    expect(redactUrl('/api/v1/jobs?status=queued')).toBe('/api/v1/jobs?status=queued');
    expect(redactUrl('/healthz')).toBe('/healthz');
  });
});
