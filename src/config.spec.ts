import { mkdtempSync, writeFileSync } from 'node:fs';
import os, { availableParallelism } from 'node:os';
import path from 'node:path';
import { DEFAULT_PRICES } from './common/price-list';
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

  describe('executors', () => {
    it('has the documented defaults: jobs under DATA_DIR, as many jobs as CPUs locally', () => {
      const c = loadConfig({ DATA_DIR: '/srv/media' });
      expect(c).toMatchObject({
        jobsDir: '/srv/media/jobs',
        workerConcurrency: availableParallelism(),
        machineTypes: null,
        slurmContainerRuntime: 'none',
        slurmPollSeconds: 2,
        slurmArrayTaskLimit: 0,
        clusterRetrySeconds: 3600,
      });
      expect(loadConfig({ SLURM_ARRAY_TASK_LIMIT: '50' }).slurmArrayTaskLimit).toBe(50);
      expect(loadConfig({ LOCAL_EXECUTOR_CONCURRENCY: '3' }).workerConcurrency).toBe(3);
    });

    it('lets a worker on a cluster follow thousands of jobs, not as many as it has CPUs', () => {
      const c = loadConfig({ EXECUTOR: 'slurm', JOBS_DIR: '/shared/jobs', WORKER_CONCURRENCY: '20000' });
      expect(c).toMatchObject({ executor: 'slurm', jobsDir: '/shared/jobs', workerConcurrency: 20000 });
      expect(loadConfig({ EXECUTOR: 'slurm' }).workerConcurrency).toBe(5000);
    });

    it('refuses bad executor settings, naming each', () => {
      let error: ConfigError | undefined;
      try {
        loadConfig({
          EXECUTOR: 'slurm',
          JOBS_DIR: '/shared/a,b',
          WORKER_CONCURRENCY: '0',
          SLURM_CONTAINER_RUNTIME: 'docker',
          SLURM_POLL_SECONDS: '0',
          SLURM_ARRAY_TASK_LIMIT: '-1',
        });
      } catch (e) {
        error = e as ConfigError;
      }
      expect(error!.problems.map((p) => p.split(':')[0]).sort()).toEqual([
        'JOBS_DIR',
        'SLURM_ARRAY_TASK_LIMIT',
        'SLURM_CONTAINER_RUNTIME',
        'SLURM_POLL_SECONDS',
        'WORKER_CONCURRENCY',
      ]);
    });

    it('reads machine types from YAML or JSON and names what is wrong in the file', () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'machines-'));
      const yaml = path.join(dir, 'machines.yaml');
      writeFileSync(
        yaml,
        [
          'machine_types:',
          '  a100:',
          '    description: one NVIDIA A100',
          '    slurm: { partition: gpu, gres: "gpu:a100:1", cpus: 8, memory: 64G, account: ml, qos: normal }',
          '    kubernetes:',
          '      resources: { requests: { cpu: "8", memory: 64Gi }, limits: { nvidia.com/gpu: 1 } }',
          '  cpu: {}',
        ].join('\n'),
      );
      const types = loadConfig({ MACHINE_TYPES_FILE: yaml }).machineTypes!;
      expect([...types.keys()]).toEqual(['a100', 'cpu']);
      expect(types.get('a100')).toEqual({
        description: 'one NVIDIA A100',
        slurm: { partition: 'gpu', gres: 'gpu:a100:1', cpus: 8, memory: '64G', account: 'ml', qos: 'normal' },
        kubernetes: {
          resources: { requests: { cpu: '8', memory: '64Gi' }, limits: { 'nvidia.com/gpu': '1' } },
        },
      });
      const json = path.join(dir, 'machines.json');
      writeFileSync(json, JSON.stringify({ machine_types: { small: { slurm: { cpus: 1 } } } }));
      expect(loadConfig({ MACHINE_TYPES_FILE: json }).machineTypes!.get('small')).toEqual({
        slurm: { cpus: 1 },
      });
      const bad = path.join(dir, 'bad.yaml');
      writeFileSync(
        bad,
        'machine_types:\n  a100:\n    slurm: { partition: "gpu --wrap=x", cpus: many, nodes: 2 }\n    gpu: 1\n',
      );
      expect(() => loadConfig({ MACHINE_TYPES_FILE: bad })).toThrow(
        /MACHINE_TYPES_FILE: .*unknown key "gpu".*a100\.slurm\.partition.*a100\.slurm\.cpus.*unknown key "nodes"/,
      );
      expect(() => loadConfig({ MACHINE_TYPES_FILE: path.join(dir, 'missing.yaml') })).toThrow(
        /MACHINE_TYPES_FILE: cannot read .* \(ENOENT\)/,
      );
    });
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

  describe('billing', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'prices-'));
    const file = (name: string, text: string) => {
      const f = path.join(dir, name);
      writeFileSync(f, text);
      return f;
    };

    it('uses the built-in price list without PRICES_FILE', () => {
      expect(loadConfig({}).prices).toBe(DEFAULT_PRICES);
    });

    it('reads PRICES_FILE as YAML or JSON', () => {
      const yaml = file(
        'p.yaml',
        'currency: EUR\nper_machine_second: {default: 0.001}\nstorage_per_gb_month: 0.1\n',
      );
      expect(loadConfig({ PRICES_FILE: yaml }).prices).toMatchObject({ currency: 'EUR', minorDigits: 2 });
      const json = file(
        'p.json',
        JSON.stringify({ currency: 'JPY', per_machine_second: { default: '1' }, storage_per_gb_month: '5' }),
      );
      expect(loadConfig({ PRICES_FILE: json }).prices).toMatchObject({ currency: 'JPY', minorDigits: 0 });
    });

    it('fails fast naming PRICES_FILE and the problem', () => {
      expect(() => loadConfig({ PRICES_FILE: path.join(dir, 'missing.yaml') })).toThrow(
        /PRICES_FILE: cannot read ".*missing.yaml" \(ENOENT\)/,
      );
      const bad = file('bad.yaml', 'currency: USD\nper_machine_second: {gpu: 1}\nstorage_per_gb_month: 1\n');
      expect(() => loadConfig({ PRICES_FILE: bad })).toThrow(
        /PRICES_FILE: ".*bad.yaml": per_machine_second.default: required/,
      );
    });
  });

  describe('kubernetes', () => {
    it('has the documented defaults', () => {
      expect(loadConfig({}).kubernetes).toEqual({
        kubeconfig: undefined,
        namespace: 'default',
        jobsPvc: undefined,
        imagePullGraceSeconds: 120,
        unschedulableSeconds: 600,
        imagePullSecrets: [],
        jobServiceAccount: undefined,
        builtinImage: undefined,
        jobTtlSeconds: 86400,
        createConcurrency: 8,
      });
    });

    it('reads every setting', () => {
      const c = loadConfig({
        KUBECONFIG: '/home/me/.kube/config',
        KUBERNETES_NAMESPACE: 'media',
        KUBERNETES_JOBS_PVC: 'media-platform-jobs',
        KUBERNETES_IMAGE_PULL_GRACE_SECONDS: '30',
        KUBERNETES_UNSCHEDULABLE_SECONDS: '900',
        KUBERNETES_IMAGE_PULL_SECRETS: 'registry-a, registry-b',
        KUBERNETES_JOB_SERVICE_ACCOUNT: 'media-jobs',
        KUBERNETES_BUILTIN_IMAGE: 'registry.example/media-platform:1.0',
        KUBERNETES_JOB_TTL_SECONDS: '3600',
        KUBERNETES_CREATE_CONCURRENCY: '2',
      });
      expect(c.kubernetes).toEqual({
        kubeconfig: '/home/me/.kube/config',
        namespace: 'media',
        jobsPvc: 'media-platform-jobs',
        imagePullGraceSeconds: 30,
        unschedulableSeconds: 900,
        imagePullSecrets: ['registry-a', 'registry-b'],
        jobServiceAccount: 'media-jobs',
        builtinImage: 'registry.example/media-platform:1.0',
        jobTtlSeconds: 3600,
        createConcurrency: 2,
      });
    });

    it('refuses names Kubernetes would refuse, naming each variable', () => {
      let error: ConfigError | undefined;
      try {
        loadConfig({
          KUBERNETES_NAMESPACE: 'Media_NS',
          KUBERNETES_JOBS_PVC: 'jobs/claim',
          KUBERNETES_IMAGE_PULL_SECRETS: 'ok,Not OK',
          KUBERNETES_JOB_SERVICE_ACCOUNT: '-x',
          KUBERNETES_BUILTIN_IMAGE: 'two words',
          KUBERNETES_IMAGE_PULL_GRACE_SECONDS: '-1',
          KUBERNETES_CREATE_CONCURRENCY: '0',
        });
      } catch (err) {
        error = err as ConfigError;
      }
      expect(error!.problems.map((p) => p.split(':')[0]).sort()).toEqual([
        'KUBERNETES_BUILTIN_IMAGE',
        'KUBERNETES_CREATE_CONCURRENCY',
        'KUBERNETES_IMAGE_PULL_GRACE_SECONDS',
        'KUBERNETES_IMAGE_PULL_SECRETS',
        'KUBERNETES_JOBS_PVC',
        'KUBERNETES_JOB_SERVICE_ACCOUNT',
        'KUBERNETES_NAMESPACE',
      ]);
      expect(error!.problems).toContain(
        'KUBERNETES_IMAGE_PULL_SECRETS: expected Secret names (DNS subdomains), got "Not OK"',
      );
    });

    it('accepts EXECUTOR=kubernetes with the jobs claim, and asks for the claim without it', () => {
      expect(loadConfig({ EXECUTOR: 'kubernetes', KUBERNETES_JOBS_PVC: 'jobs' }).executor).toBe('kubernetes');
      expect(() => loadConfig({ EXECUTOR: 'kubernetes' })).toThrow(
        /KUBERNETES_JOBS_PVC: required when EXECUTOR=kubernetes/,
      );
    });

    it("names the problems of a machine type's kubernetes part", () => {
      const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'k8s-types-')), 'types.yaml');
      writeFileSync(
        file,
        'machine_types:\n  gpu:\n    kubernetes: { resources: { limits: { nvidia.com/gpu: lots } }, pods: 2 }\n',
      );
      expect(() => loadConfig({ MACHINE_TYPES_FILE: file })).toThrow(
        /machine_types\.gpu\.kubernetes\.pods: unknown key.*machine_types\.gpu\.kubernetes\.resources\.limits\.nvidia\.com\/gpu: "lots" is not a quantity/,
      );
    });
  });

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
