import { loadConfig } from '../config';

describe('loadConfig', () => {
  describe('chat bridge', () => {
    const key = Buffer.alloc(32, 7);

    it('has no homeserver, binaries or key by default, and default login throttling', () => {
      expect(loadConfig({})).toMatchObject({
        matrixHomeserverUrl: undefined,
        matrixServerName: undefined,
        dendriteBin: undefined,
        matterbridgeBin: undefined,
        sealingKey: undefined,
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
      expect(loadConfig({ BRIDGE_SECRET_KEY: key.toString('hex') }).sealingKey).toEqual(key);
      expect(loadConfig({ BRIDGE_SECRET_KEY: key.toString('base64') }).sealingKey).toEqual(key);
      expect(loadConfig({ BRIDGE_SECRET_KEY: key.toString('base64url') }).sealingKey).toEqual(key);
      for (const bad of ['short', Buffer.alloc(16).toString('hex'), Buffer.alloc(33).toString('base64')])
        expect(() => loadConfig({ BRIDGE_SECRET_KEY: bad })).toThrow(/BRIDGE_SECRET_KEY/);
    });

    it('requires the sealing key in production only when the bridge role runs', () => {
      expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
        /SEALING_KEY \(or BRIDGE_SECRET_KEY\): required in production/,
      );
      expect(loadConfig({ NODE_ENV: 'production', ROLES: 'api' }).sealingKey).toBeUndefined();
      expect(
        loadConfig({ NODE_ENV: 'production', BRIDGE_SECRET_KEY: key.toString('hex') }).sealingKey,
      ).toEqual(key);
      expect(loadConfig({ NODE_ENV: 'production', SEALING_KEY: key.toString('hex') }).sealingKey).toEqual(
        key,
      );
    });

    it('takes SEALING_KEY as the same key under its general name, and refuses two different keys', () => {
      expect(loadConfig({ SEALING_KEY: key.toString('base64') }).sealingKey).toEqual(key);
      expect(
        loadConfig({ SEALING_KEY: key.toString('hex'), BRIDGE_SECRET_KEY: key.toString('base64') })
          .sealingKey,
      ).toEqual(key);
      expect(() =>
        loadConfig({
          SEALING_KEY: key.toString('hex'),
          BRIDGE_SECRET_KEY: Buffer.alloc(32, 8).toString('hex'),
        }),
      ).toThrow(/SEALING_KEY: differs from BRIDGE_SECRET_KEY/);
    });

    it('resolves DENDRITE_BIN and MATTERBRIDGE_BIN to executable files', () => {
      const c = loadConfig({ DENDRITE_BIN: process.execPath, MATTERBRIDGE_BIN: process.execPath });
      expect(c.dendriteBin).toBe(process.execPath);
      expect(() => loadConfig({ DENDRITE_BIN: '/nonexistent/dendrite' })).toThrow(/DENDRITE_BIN/);
      expect(() => loadConfig({ MATTERBRIDGE_BIN: __filename })).toThrow(/MATTERBRIDGE_BIN/);
    });
  });
});
