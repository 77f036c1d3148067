import { loadConfig } from '../config';

describe('loadConfig', () => {
  describe('webhooks', () => {
    it('has https only, no private addresses, a 10 s bound and 4 tasks at once by default', () => {
      expect(loadConfig({})).toMatchObject({
        webhookAllowHttp: false,
        webhookAllowPrivate: [],
        webhookTimeoutSeconds: 10,
        webhookConcurrency: 4,
      });
    });

    it('reads WEBHOOK_ALLOW_PRIVATE as host:port entries and refuses anything else', () => {
      expect(
        loadConfig({
          WEBHOOK_ALLOW_PRIVATE: '127.0.0.1:4000, Receiver.local:80,[::1]:8080',
          WEBHOOK_ALLOW_HTTP: 'yes',
        }),
      ).toMatchObject({
        webhookAllowPrivate: ['127.0.0.1:4000', 'receiver.local:80', '[::1]:8080'],
        webhookAllowHttp: true,
      });
      for (const bad of ['127.0.0.1', '::1:80', 'host:99999', 'http://host:80']) {
        expect(() => loadConfig({ WEBHOOK_ALLOW_PRIVATE: bad })).toThrow(/WEBHOOK_ALLOW_PRIVATE/);
      }
    });
  });
});
