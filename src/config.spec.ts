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
      });
    } catch (e) {
      error = e as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const names = error!.problems.map((p) => p.split(':')[0]);
    expect(names.sort()).toEqual([
      'DATABASE_URL',
      'GRAPHQL_IDE',
      'MAX_UPLOAD_BYTES',
      'PORT',
      'ROLES',
      'STORAGE',
    ]);
  });

  it('requires S3_BUCKET with STORAGE=s3', () => {
    expect(() => loadConfig({ STORAGE: 's3' })).toThrow(/S3_BUCKET/);
    expect(loadConfig({ STORAGE: 's3', S3_BUCKET: 'media' }).s3Bucket).toBe('media');
  });

  describe('chat bridge', () => {
    const key = Buffer.alloc(32, 7);

    it('has no homeserver, binaries or key by default, and default login throttling', () => {
      expect(loadConfig({})).toMatchObject({
        matrixHomeserverUrl: undefined,
        matrixServerName: undefined,
        dendriteBin: undefined,
        matterbridgeBin: undefined,
        bridgeSecretKey: undefined,
        bridgeLoginMaxFailures: 5,
        bridgeLoginMaxFailuresPerIp: 20,
        bridgeLoginWindowSeconds: 900,
      });
    });

    it('derives the server name from the homeserver URL and needs its shared secret', () => {
      expect(() => loadConfig({ MATRIX_HOMESERVER_URL: 'https://matrix.example.org' })).toThrow(
        /MATRIX_REGISTRATION_SHARED_SECRET/,
      );
      const c = loadConfig({
        MATRIX_HOMESERVER_URL: 'https://Matrix.example.org:8448/',
        MATRIX_REGISTRATION_SHARED_SECRET: 's3cret',
      });
      expect(c.matrixHomeserverUrl).toBe('https://Matrix.example.org:8448');
      expect(c.matrixServerName).toBe('matrix.example.org:8448');
      expect(
        loadConfig({
          MATRIX_HOMESERVER_URL: 'https://matrix.example.org',
          MATRIX_REGISTRATION_SHARED_SECRET: 's3cret',
          MATRIX_SERVER_NAME: 'Example.org',
        }).matrixServerName,
      ).toBe('example.org');
      expect(() => loadConfig({ MATRIX_SERVER_NAME: 'not a name' })).toThrow(/MATRIX_SERVER_NAME/);
    });

    it('takes BRIDGE_SECRET_KEY as 32 bytes in hex or base64 and refuses anything else', () => {
      expect(loadConfig({ BRIDGE_SECRET_KEY: key.toString('hex') }).bridgeSecretKey).toEqual(key);
      expect(loadConfig({ BRIDGE_SECRET_KEY: key.toString('base64') }).bridgeSecretKey).toEqual(key);
      expect(loadConfig({ BRIDGE_SECRET_KEY: key.toString('base64url') }).bridgeSecretKey).toEqual(key);
      for (const bad of ['short', Buffer.alloc(16).toString('hex'), Buffer.alloc(33).toString('base64')])
        expect(() => loadConfig({ BRIDGE_SECRET_KEY: bad })).toThrow(/BRIDGE_SECRET_KEY/);
    });

    it('requires BRIDGE_SECRET_KEY in production only when the bridge role runs', () => {
      expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
        /BRIDGE_SECRET_KEY: required in production/,
      );
      expect(loadConfig({ NODE_ENV: 'production', ROLES: 'api' }).bridgeSecretKey).toBeUndefined();
      expect(
        loadConfig({ NODE_ENV: 'production', BRIDGE_SECRET_KEY: key.toString('hex') }).bridgeSecretKey,
      ).toEqual(key);
    });

    it('resolves DENDRITE_BIN and MATTERBRIDGE_BIN to executable files', () => {
      const c = loadConfig({ DENDRITE_BIN: process.execPath, MATTERBRIDGE_BIN: process.execPath });
      expect(c.dendriteBin).toBe(process.execPath);
      expect(() => loadConfig({ DENDRITE_BIN: '/nonexistent/dendrite' })).toThrow(/DENDRITE_BIN/);
      expect(() => loadConfig({ MATTERBRIDGE_BIN: __filename })).toThrow(/MATTERBRIDGE_BIN/);
    });
  });
});
