import http from 'node:http';
import type { MikroORM } from '@mikro-orm/postgresql';
import express from 'express';
import type { Config } from '../config';
import type { Logger } from '../common/logger';
import {
  drain,
  errorResponses,
  jsonBodies,
  listen,
  noRoute,
  requestIds,
  requestLogs,
} from '../http/http.helpers';
import { cors } from '../http/http.cors';
import { chatBridgeRoutes } from './chat-bridge.routes';
import { loadSealingKey, SecretBox } from '../common/sealing';
import { BridgeAccounts } from './chat-bridge.accounts';
import { ChatBridgeService } from './chat-bridge.service';
import { SupervisorGroup } from './chat-bridge.supervisor';
import { LoginThrottle } from './chat-bridge.throttle';
import { createHomeserver } from './homeserver.factory';

export interface Bridge {
  service: ChatBridgeService;
  server: http.Server;
  listen(port?: number, host?: string): Promise<number>;
  /** Stops accepting, lets in-flight requests finish (bounded), then stops the supervised processes. */
  close(): Promise<void>;
}

export interface BridgeDeps {
  config: Config;
  log: Logger;
  orm: MikroORM;
}

/**
 * The `bridge` role: its own HTTP listener (`BRIDGE_PORT`) with its own credential, in front of
 * the Matrix homeserver and the Dendrite and matterbridge processes it supervises.
 */
export async function createBridge({ config, log, orm }: BridgeDeps): Promise<Bridge> {
  const bridgeLog = log.child({ role: 'bridge' });
  const homeserver = createHomeserver(config);
  const secrets = new SecretBox(await loadSealingKey(config, bridgeLog));
  const accounts = new BridgeAccounts({
    orm,
    homeserver,
    secrets,
    throttle: new LoginThrottle(orm, {
      maxPerUser: config.bridgeLoginMaxFailures,
      maxPerIp: config.bridgeLoginMaxFailuresPerIp,
      windowSeconds: config.bridgeLoginWindowSeconds,
    }),
  });
  const service = new ChatBridgeService({
    orm,
    homeserver,
    secrets,
    supervisors: new SupervisorGroup(),
    log: bridgeLog,
    dataDir: config.dataDir,
    listenHost: config.host,
    reservedPorts: [config.port, config.bridgePort],
    dendriteBin: config.dendriteBin,
    matterbridgeBin: config.matterbridgeBin,
    childPath: config.localExecutorPath,
  });
  if (!config.matrixHomeserverUrl)
    bridgeLog.warn('MATRIX_HOMESERVER_URL is unset: the chat bridge cannot create or log in users');

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  app.use(requestIds());
  app.use(requestLogs(bridgeLog));
  app.use(cors(config.corsOrigins, ['x-api-key']));
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.use(jsonBodies(config.maxBodyBytes));
  app.use(chatBridgeRoutes(accounts, service));
  app.use(noRoute());
  app.use(errorResponses(config.maxBodyBytes, bridgeLog));
  const server = http.createServer(app);

  await service.resumeAll();
  let closing: Promise<void> | undefined;
  return {
    service,
    server,
    listen: (port = config.bridgePort, host = config.host) => listen(server, port, host),
    close: () =>
      (closing ??= (async () => {
        await drain(server, config.shutdownTimeoutMs);
        await service.stopAll();
      })()),
  };
}
