import { availableParallelism } from 'node:os';
import { ConfigError, loadConfig } from './config';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      publicUrl: 'http://127.0.0.1:8080',
      cdnUrl: 'http://127.0.0.1:8080',
      databaseUrl: undefined,
      oidcIssuer: undefined,
      apiKeyHeader: 'x-service-key',
      storage: 'local',
      executor: 'local',
      roles: ['api', 'worker', 'bridge'],
      bridgePort: 8081,
      maxUploadBytes: 5368709120,
      adminSubjects: [],
      localExecutorTrust: 'builtin',
      localExecutorConcurrency: availableParallelism(),
      graphqlIntrospection: true,
      graphqlIde: true,
    });
    expect(c.dataDir).toMatch(/\.data$/);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('derives PUBLIC_URL and CDN_URL and trims trailing slashes', () => {
    expect(loadConfig({ HOST: '0.0.0.0', PORT: '9000' }).publicUrl).toBe('http://0.0.0.0:9000');
    const c = loadConfig({ PUBLIC_URL: 'https://api.example.com/', CDN_URL: 'https://cdn.example.com/' });
    expect(c.publicUrl).toBe('https://api.example.com');
    expect(c.cdnUrl).toBe('https://cdn.example.com');
  });

  it('keeps OIDC_ISSUER exactly as given: tokens must name it character for character', () => {
    expect(loadConfig({ OIDC_ISSUER: 'https://tenant.eu.auth0.com/' }).oidcIssuer).toBe(
      'https://tenant.eu.auth0.com/',
    );
    expect(loadConfig({ OIDC_ISSUER: 'https://kc.example.com/realms/media' }).oidcIssuer).toBe(
      'https://kc.example.com/realms/media',
    );
  });

  it('turns introspection and the IDE off in production unless enabled', () => {
    const production = { NODE_ENV: 'production', ROLES: 'api,worker' };
    expect(loadConfig(production)).toMatchObject({
      graphqlIntrospection: false,
      graphqlIde: false,
    });
    expect(loadConfig({ ...production, GRAPHQL_INTROSPECTION: 'true' }).graphqlIntrospection).toBe(true);
  });

  it('fails fast naming every bad variable at once', () => {
    let error: ConfigError | undefined;
    try {
      loadConfig({
        PORT: 'eighty',
        STORAGE: 'ftp',
        DATABASE_URL: 'mysql://x',
        ROLES: 'api,cook',
        MAX_UPLOAD_BYTES: '-1',
        GRAPHQL_IDE: 'maybe',
        EXECUTOR: 'kubernetes',
        LOCAL_EXECUTOR_CONCURRENCY: '0',
      });
    } catch (e) {
      error = e as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const names = error!.problems.map((p) => p.split(':')[0]);
    expect(names.sort()).toEqual([
      'DATABASE_URL',
      'GRAPHQL_IDE',
      'KUBERNETES_JOBS_PVC',
      'LOCAL_EXECUTOR_CONCURRENCY',
      'MAX_UPLOAD_BYTES',
      'PORT',
      'ROLES',
      'STORAGE',
    ]);
  });

  it('configures the login flow: scopes, provider timeout, session lifetime', () => {
    expect(loadConfig({})).toMatchObject({
      oidcClientAuthMethod: 'client_secret_post',
      oidcScopes: 'openid profile email offline_access',
      oidcTimeoutSeconds: 5,
      sessionTtlSeconds: 14 * 24 * 3600,
    });
    expect(
      loadConfig({
        OIDC_CLIENT_AUTH_METHOD: 'client_secret_basic',
        OIDC_SCOPES: 'openid email',
        OIDC_TIMEOUT_SECONDS: '2',
        SESSION_TTL_SECONDS: '60',
      }),
    ).toMatchObject({
      oidcClientAuthMethod: 'client_secret_basic',
      oidcScopes: 'openid email',
      oidcTimeoutSeconds: 2,
      sessionTtlSeconds: 60,
    });
    let error: ConfigError | undefined;
    try {
      loadConfig({
        OIDC_CLIENT_AUTH_METHOD: 'private_key_jwt',
        OIDC_SCOPES: 'profile email',
        OIDC_TIMEOUT_SECONDS: '0',
        SESSION_TTL_SECONDS: 'a day',
      });
    } catch (e) {
      error = e as ConfigError;
    }
    expect(error!.problems.map((p) => p.split(':')[0]).sort()).toEqual([
      'OIDC_CLIENT_AUTH_METHOD',
      'OIDC_SCOPES',
      'OIDC_TIMEOUT_SECONDS',
      'SESSION_TTL_SECONDS',
    ]);
  });

  it('requires S3_BUCKET with STORAGE=s3', () => {
    expect(() => loadConfig({ STORAGE: 's3' })).toThrow(/S3_BUCKET/);
    expect(loadConfig({ STORAGE: 's3', S3_BUCKET: 'media' }).s3Bucket).toBe('media');
  });

  describe('operability', () => {
    it('has the documented defaults: no metrics port, no CORS origins, limits per minute', () => {
      expect(loadConfig({})).toMatchObject({
        metricsPort: undefined,
        corsOrigins: [],
        rateLimitPerMinute: 600,
        rateLimitUploadsPerMinute: 60,
        rateLimitDeploymentsPerMinute: 60,
      });
    });

    it('reads exact origins and refuses what is not one', () => {
      expect(
        loadConfig({ CORS_ORIGINS: 'https://app.example.com, http://localhost:5173' }).corsOrigins,
      ).toEqual(['https://app.example.com', 'http://localhost:5173']);
      expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
      for (const bad of [
        'app.example.com',
        'https://app.example.com/',
        'https://*.example.com',
        'ftp://x.org',
      ])
        expect(() => loadConfig({ CORS_ORIGINS: bad })).toThrow(/CORS_ORIGINS/);
    });

    it('reads METRICS_PORT (0: any free port) and limits (0: off)', () => {
      expect(loadConfig({ METRICS_PORT: '9464', RATE_LIMIT_PER_MINUTE: '0' })).toMatchObject({
        metricsPort: 9464,
        rateLimitPerMinute: 0,
      });
      expect(loadConfig({ METRICS_PORT: '0' }).metricsPort).toBe(0);
      expect(() => loadConfig({ METRICS_PORT: 'x' })).toThrow(/METRICS_PORT/);
      expect(() => loadConfig({ RATE_LIMIT_UPLOADS_PER_MINUTE: '-1' })).toThrow(
        /RATE_LIMIT_UPLOADS_PER_MINUTE/,
      );
    });
  });
});
