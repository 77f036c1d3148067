import 'reflect-metadata';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { loadConfig, type Config } from '../../src/config';
import { createLogger, type Logger } from '../../src/common/logger';
import { startRuntime, type Runtime, type RuntimeOptions } from '../../src/server/bootstrap';
import { createTestDatabase } from './db';
import { TestIssuer } from './oidc-issuer';

export interface TestApp {
  url: string;
  port: number;
  /** The chat bridge's listener, when the `bridge` role runs (it does by default). */
  bridgeUrl: string | undefined;
  runtime: Runtime;
  config: Config;
  issuer: TestIssuer;
  databaseUrl: string;
  /** supertest bound to the running server (real HTTP on a real port). */
  http: () => request.Agent;
  /** A user token for `sub` from the test issuer. */
  tokenFor(sub: string, claims?: Record<string, unknown>): Promise<string>;
  /** POSTs a GraphQL operation with the given Authorization header value (or none). */
  gql(query: string, variables?: Record<string, unknown>, auth?: string): Promise<request.Response>;
  close(): Promise<void>;
}

/** Starts the whole service on port 0 against a fresh database and a local test issuer. */
export async function startTestApp(
  env: Record<string, string> = {},
  opts: {
    databaseUrl?: string;
    issuer?: TestIssuer;
    onQuery?: (sql: string, values?: readonly unknown[]) => void;
    /** Where the service logs (the tests of log lines read them). */
    log?: Logger;
    /** Changes the app's declared HTTP pipeline (test/http-pipeline.test.ts). */
    editPipeline?: RuntimeOptions['editPipeline'];
  } = {},
): Promise<TestApp> {
  const issuer = opts.issuer ?? (await TestIssuer.start());
  const databaseUrl = opts.databaseUrl ?? (await createTestDatabase());
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'media-test-data-'));
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    OIDC_ISSUER: issuer.issuer,
    OIDC_AUDIENCE: 'media-platform-test',
    SHUTDOWN_TIMEOUT_MS: '5000',
    // Fixed, so that apps started on the same DATA_DIR and database read each other's secrets.
    BRIDGE_SECRET_KEY: '0'.repeat(64),
    // Suites send far more than a person would; test/rate-limits.test.ts sets its own limits.
    RATE_LIMIT_PER_MINUTE: '1000000',
    RATE_LIMIT_UPLOADS_PER_MINUTE: '1000000',
    RATE_LIMIT_DEPLOYMENTS_PER_MINUTE: '1000000',
    // No web app build unless a test brings one (test/web-app.test.ts).
    WEB_DIR: path.join(dataDir, 'web'),
    ...env,
  });
  const log = opts.log ?? createLogger(config.logLevel, { apiKeyHeader: config.apiKeyHeader });
  const runtime = await startRuntime(config, log, {
    onQuery: opts.onQuery,
    editPipeline: opts.editPipeline,
  });
  const port = await runtime.app.listen(config.port, '127.0.0.1');
  const url = `http://127.0.0.1:${port}`;
  const bridgePort = await runtime.bridge?.listen(0, '127.0.0.1');
  const http = () => request.agent(url);
  return {
    url,
    port,
    bridgeUrl: bridgePort === undefined ? undefined : `http://127.0.0.1:${bridgePort}`,
    runtime,
    config,
    issuer,
    databaseUrl,
    http,
    tokenFor: (sub, claims) => issuer.token(sub, { claims }),
    gql: (query, variables, auth) => {
      const req = http().post('/graphql').set('content-type', 'application/json');
      if (auth) req.set('authorization', auth);
      return req.send({ query, variables });
    },
    close: async () => {
      await runtime.stop();
      if (!opts.issuer) await issuer.stop();
    },
  };
}
