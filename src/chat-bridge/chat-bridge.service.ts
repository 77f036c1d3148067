import { rm } from 'node:fs/promises';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import type { Logger } from '../common/logger';
import { findPage, mapPage, type Page, type PageArgs } from '../common/pagination';
import { BridgeApiKey, BridgeUser, DendriteInstance, Matterbridge } from './chat-bridge.entity';
import {
  hashBridgeApiKey,
  hashPassword,
  newApiKey,
  PASSWORD_MAX,
  validatePassword,
  validateUsername,
  verifyPassword,
} from './chat-bridge.credentials';
import type { SecretBox } from '../common/sealing';
import type { SupervisedState, SupervisorGroup } from './chat-bridge.supervisor';
import type { LoginThrottle } from './chat-bridge.throttle';
import { dendriteArgv, dendriteFiles, generateSigningKey, writeDendriteInstance } from './dendrite.config';
import type { Homeserver } from './homeserver.port';
import {
  matterbridgeArgv,
  matterbridgeFiles,
  validateBridgeConf,
  writeMatterbridge,
} from './matterbridge.config';

/** The bridge user behind an `X-API-Key`. */
export interface BridgePrincipal {
  userId: string;
  username: string;
}

/** `unmanaged`: no binary is configured, so this process writes the configuration but runs nothing. */
export type ProcessStatus = SupervisedState | 'unmanaged';

export interface Supervised<T> {
  row: T;
  status: ProcessStatus;
}

export interface ChatBridgeDeps {
  orm: MikroORM;
  homeserver: Homeserver | null;
  secrets: SecretBox;
  throttle: LoginThrottle;
  supervisors: SupervisorGroup;
  log: Logger;
  dataDir: string;
  /** Where Dendrite instances listen (the service's HOST). */
  listenHost: string;
  /** Ports of this service's own listeners, refused for instances. */
  reservedPorts: readonly number[];
  dendriteBin?: string;
  matterbridgeBin?: string;
  /** PATH of the processes it runs (their environment holds nothing else of the service's). */
  childPath: string;
}

const API_KEY_LAST_USED_RESOLUTION_MS = 60_000;
const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const BRIDGE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

const accessTokenContext = (userId: string) => `chat-bridge:user:${userId}:access-token`;
const platformTokenContext = (bridgeId: string) => `chat-bridge:matterbridge:${bridgeId}:token`;
const dendriteKey = (id: string) => `dendrite:${id}`;
const matterbridgeKey = (id: string) => `matterbridge:${id}`;

function requireString(value: unknown, field: string): string {
  if (value === undefined || value === null || value === '')
    throw AppError.validation({ [field]: 'is required' });
  if (typeof value !== 'string') throw AppError.validation({ [field]: 'must be a string' });
  return value;
}

/** An RFC 1123 host name in lowercase; IP addresses are refused (a Matrix server name is a name). */
export function validateHostname(value: unknown): string {
  const hostname = requireString(value, 'hostname');
  const labels = hostname.split('.');
  let problem: string | undefined;
  if (hostname !== hostname.toLowerCase()) problem = 'must be lowercase';
  else if (hostname.length > 253 || !labels.every((l) => HOST_LABEL.test(l)))
    problem = 'must be a host name: labels of a-z, 0-9 and inner hyphens, separated by dots';
  else if (/^\d+$/.test(labels[labels.length - 1])) problem = 'must be a host name, not an IP address';
  if (problem) throw AppError.validation({ hostname: problem });
  return hostname;
}

/** A port from 1024 to 65535, as a string of digits (the legacy shape) or a number. */
export function validatePort(value: unknown, reserved: readonly number[]): number {
  const text = typeof value === 'number' ? String(value) : requireString(value, 'port');
  const port = Number(text);
  if (!/^\d{1,5}$/.test(text) || port < 1024 || port > 65535)
    throw AppError.validation({ port: 'must be a number from 1024 to 65535' });
  if (reserved.includes(port)) throw AppError.validation({ port: 'is used by this service itself' });
  return port;
}

/** A unique violation as CONFLICT, naming what clashed; anything else unchanged. */
function conflictOn(err: unknown, messages: Record<string, string>): unknown {
  if (!(err instanceof UniqueConstraintViolationException)) return err;
  const constraint = (err as { constraint?: string }).constraint ?? '';
  const key = Object.keys(messages).find((k) => constraint.includes(k));
  return new AppError('CONFLICT', messages[key ?? Object.keys(messages)[0]]);
}

export class ChatBridgeService {
  private dummyHash: Promise<string> | undefined;

  constructor(private readonly deps: ChatBridgeDeps) {}

  /** Registers the account on the homeserver and answers a new API key, shown only here. */
  async createUser(input: {
    username: unknown;
    password: unknown;
  }): Promise<{ apiKey: string; hostname: string }> {
    const username = requireString(input.username, 'username');
    const password = requireString(input.password, 'password');
    const homeserver = this.requireHomeserver();
    validateUsername(username, homeserver.serverName);
    validatePassword(password, username);
    const passwordHash = await hashPassword(password);
    const apiKey = newApiKey();
    try {
      // The inserted row holds off a concurrent creation of the same name until the homeserver has
      // answered; when registration fails, nothing is stored.
      await this.deps.orm.em.fork().transactional(async (em) => {
        const user = em.create(BridgeUser, {
          username,
          passwordHash,
          matrixUserId: '',
          accessTokenSealed: '',
        });
        await em.flush();
        const account = await homeserver.register(username, password);
        user.matrixUserId = account.userId;
        user.accessTokenSealed = this.deps.secrets.seal(account.accessToken, accessTokenContext(user.id));
        em.create(BridgeApiKey, { user, keyHash: hashBridgeApiKey(apiKey) });
      });
    } catch (err) {
      throw conflictOn(err, { username: 'this username is taken' });
    }
    return { apiKey, hostname: homeserver.serverName };
  }

  /**
   * Checks the password here and on the homeserver and answers a new API key. Unknown users and
   * wrong passwords get the same answer after the same work; failures are throttled.
   */
  async login(input: {
    username: unknown;
    password: unknown;
    clientIp: string;
  }): Promise<{ apiKey: string }> {
    const username = requireString(input.username, 'username');
    const password = requireString(input.password, 'password');
    if (username.length > 255) throw AppError.validation({ username: 'is too long' });
    if (password.length > PASSWORD_MAX) throw AppError.validation({ password: 'is too long' });
    const homeserver = this.requireHomeserver();
    const throttleKey = username.toLowerCase();
    await this.deps.throttle.attempt(throttleKey, input.clientIp);
    const em = this.deps.orm.em.fork();
    const user = await em.findOne(BridgeUser, { username });
    const matches = await verifyPassword(password, user?.passwordHash ?? (await this.dummyPasswordHash()));
    if (!user || !matches || !(await homeserver.checkPassword(username, password))) {
      throw new AppError('UNAUTHENTICATED', 'wrong username or password');
    }
    await this.deps.throttle.succeeded(throttleKey, input.clientIp);
    const apiKey = newApiKey();
    em.create(BridgeApiKey, { user, keyHash: hashBridgeApiKey(apiKey) });
    await em.flush();
    return { apiKey };
  }

  async authenticate(apiKey: string | undefined): Promise<BridgePrincipal> {
    if (!apiKey) throw new AppError('UNAUTHENTICATED', 'send your API key in the X-API-Key header');
    const em = this.deps.orm.em.fork();
    const key = await em.findOne(BridgeApiKey, { keyHash: hashBridgeApiKey(apiKey) }, { populate: ['user'] });
    if (!key) throw new AppError('UNAUTHENTICATED', 'unknown API key');
    if (!key.lastUsedAt || Date.now() - key.lastUsedAt.getTime() > API_KEY_LAST_USED_RESOLUTION_MS)
      await em.nativeUpdate(BridgeApiKey, { id: key.id }, { lastUsedAt: new Date() });
    return { userId: key.user.id, username: key.user.username };
  }

  /** Records the instance, writes its key and configuration, and runs it when DENDRITE_BIN is set. */
  async createDendrite(
    principal: BridgePrincipal,
    input: { hostname: unknown; port: unknown },
  ): Promise<Supervised<DendriteInstance>> {
    const hostname = validateHostname(input.hostname);
    const port = validatePort(input.port, this.deps.reservedPorts);
    const key = generateSigningKey();
    let instance: DendriteInstance | undefined;
    try {
      await this.deps.orm.em.fork().transactional(async (em) => {
        instance = em.create(DendriteInstance, {
          user: principal.userId,
          hostname,
          port,
          keyId: key.keyId,
          publicKey: key.publicKey,
        });
        await em.flush();
        await writeDendriteInstance(dendriteFiles(this.deps.dataDir, instance.id), hostname, key);
      });
    } catch (err) {
      if (instance)
        await rm(dendriteFiles(this.deps.dataDir, instance.id).dir, { recursive: true, force: true });
      throw conflictOn(err, {
        port: `port ${port} is used by another instance`,
        hostname: `hostname ${hostname} is used by another instance`,
      });
    }
    return this.superviseDendrite(instance!);
  }

  async listDendrites(
    principal: BridgePrincipal,
    args: PageArgs,
  ): Promise<Page<Supervised<DendriteInstance>>> {
    const page = await findPage(this.deps.orm.em.fork(), DendriteInstance, { user: principal.userId }, args);
    return mapPage(page, (row) => ({ row, status: this.status(dendriteKey(row.id), this.deps.dendriteBin) }));
  }

  async deleteDendrite(principal: BridgePrincipal, id: string): Promise<void> {
    await this.deleteSupervised(
      DendriteInstance,
      principal,
      id,
      'homeserver instance',
      dendriteKey(id),
      dendriteFiles(this.deps.dataDir, id).dir,
    );
  }

  /**
   * Creates a private Matrix room for the bridge (owned by the user's Matrix account), writes a
   * matterbridge configuration joining it with the platform channel, and runs it when
   * MATTERBRIDGE_BIN is set.
   */
  async createMatterbridge(
    principal: BridgePrincipal,
    input: { name: unknown; conf: unknown },
  ): Promise<Supervised<Matterbridge>> {
    const name = requireString(input.name, 'name');
    if (!BRIDGE_NAME.test(name))
      throw AppError.validation({
        name: 'must be 1-63 characters of a-z, 0-9 and -, starting with a letter or digit',
      });
    if (typeof input.conf !== 'object' || input.conf === null || Array.isArray(input.conf))
      throw AppError.validation({ conf: 'must be an object with platform, token and channel' });
    const conf = validateBridgeConf(input.conf as Record<string, unknown>);
    const homeserver = this.requireHomeserver();
    // Unique across the service: bridge names have no `_`, so the last `_` splits it unambiguously.
    const networkName = `${principal.username}_${name}`;
    if (`#${networkName}:${homeserver.serverName}`.length > 255)
      throw AppError.validation({ name: 'is too long: the Matrix room alias would exceed 255 characters' });
    const { secrets } = this.deps;
    let bridge: Matterbridge | undefined;
    try {
      await this.deps.orm.em.fork().transactional(async (em) => {
        const user = await em.findOneOrFail(BridgeUser, principal.userId);
        bridge = em.create(Matterbridge, {
          user,
          name,
          networkName,
          platform: conf.platform,
          channel: conf.channel,
          settings: conf.settings,
          tokenSealed: '',
          matrixRoomId: '',
          matrixRoomAlias: '',
        });
        bridge.tokenSealed = secrets.seal(conf.token, platformTokenContext(bridge.id));
        await em.flush();
        const accessToken = secrets.open(user.accessTokenSealed, accessTokenContext(user.id));
        const room = await homeserver.createRoom(accessToken, { name, aliasLocalpart: networkName });
        bridge.matrixRoomId = room.roomId;
        bridge.matrixRoomAlias = room.alias;
        await writeMatterbridge(matterbridgeFiles(this.deps.dataDir, bridge.id), {
          networkName,
          account: name,
          conf,
          matrix: { url: homeserver.url, userId: user.matrixUserId, accessToken, room: room.alias },
        });
      });
    } catch (err) {
      if (bridge)
        await rm(matterbridgeFiles(this.deps.dataDir, bridge.id).dir, { recursive: true, force: true });
      throw conflictOn(err, { name: `you already have a bridge named ${name}` });
    }
    return this.superviseMatterbridge(bridge!);
  }

  async listMatterbridges(
    principal: BridgePrincipal,
    args: PageArgs,
  ): Promise<Page<Supervised<Matterbridge>>> {
    const page = await findPage(this.deps.orm.em.fork(), Matterbridge, { user: principal.userId }, args);
    return mapPage(page, (row) => ({
      row,
      status: this.status(matterbridgeKey(row.id), this.deps.matterbridgeBin),
    }));
  }

  /** Also frees the room alias, so the name can be used again; the room itself stays. */
  async deleteMatterbridge(principal: BridgePrincipal, id: string): Promise<void> {
    await this.deleteSupervised(
      Matterbridge,
      principal,
      id,
      'bridge',
      matterbridgeKey(id),
      matterbridgeFiles(this.deps.dataDir, id).dir,
      (row) => this.releaseAlias(principal, row),
    );
  }

  /** At start: runs every recorded instance and bridge whose binary is configured. */
  async resumeAll(): Promise<void> {
    const em = this.deps.orm.em.fork();
    if (this.deps.dendriteBin)
      for (const row of await em.find(DendriteInstance, {})) this.superviseDendrite(row);
    if (this.deps.matterbridgeBin)
      for (const row of await em.find(Matterbridge, {})) this.superviseMatterbridge(row);
  }

  stopAll(): Promise<void> {
    return this.deps.supervisors.stopAll();
  }

  private superviseDendrite(row: DendriteInstance): Supervised<DendriteInstance> {
    const bin = this.deps.dendriteBin;
    if (bin) {
      const files = dendriteFiles(this.deps.dataDir, row.id);
      this.supervise(dendriteKey(row.id), dendriteArgv(bin, files, this.deps.listenHost, row.port), files);
    }
    return { row, status: this.status(dendriteKey(row.id), bin) };
  }

  private superviseMatterbridge(row: Matterbridge): Supervised<Matterbridge> {
    const bin = this.deps.matterbridgeBin;
    if (bin) {
      const files = matterbridgeFiles(this.deps.dataDir, row.id);
      this.supervise(matterbridgeKey(row.id), matterbridgeArgv(bin, files), files);
    }
    return { row, status: this.status(matterbridgeKey(row.id), bin) };
  }

  private supervise(key: string, argv: string[], files: { dir: string; log: string }): void {
    this.deps.supervisors.start(key, {
      argv,
      cwd: files.dir,
      // As jobs get: the programs read their configuration files, never the service's secrets.
      env: { PATH: this.deps.childPath, HOME: files.dir, TMPDIR: files.dir, LANG: 'C.UTF-8' },
      logFile: files.log,
      log: this.deps.log.child({ process: key }),
    });
  }

  private status(key: string, bin: string | undefined): ProcessStatus {
    if (!bin) return 'unmanaged';
    return this.deps.supervisors.get(key)?.state ?? 'stopped';
  }

  private requireHomeserver(): Homeserver {
    if (!this.deps.homeserver)
      throw new AppError('UNAVAILABLE', 'no Matrix homeserver is configured (set MATRIX_HOMESERVER_URL)');
    return this.deps.homeserver;
  }

  /** Best effort: a homeserver that is down must not keep a bridge from being deleted. */
  private async releaseAlias(principal: BridgePrincipal, bridge: Matterbridge): Promise<void> {
    try {
      const user = await this.deps.orm.em.fork().findOneOrFail(BridgeUser, principal.userId);
      const accessToken = this.deps.secrets.open(user.accessTokenSealed, accessTokenContext(user.id));
      await this.requireHomeserver().deleteAlias(accessToken, bridge.matrixRoomAlias);
    } catch (err) {
      this.deps.log.warn({ err, alias: bridge.matrixRoomAlias }, 'could not remove the Matrix room alias');
    }
  }

  private dummyPasswordHash(): Promise<string> {
    return (this.dummyHash ??= hashPassword('not the password of anyone'));
  }

  /** Stops its process, forgets it and removes its files; another user's row is 404. */
  private async deleteSupervised<T extends DendriteInstance | Matterbridge>(
    entity: new () => T,
    principal: BridgePrincipal,
    id: string,
    what: string,
    key: string,
    dir: string,
    beforeForget?: (row: T) => Promise<void>,
  ): Promise<void> {
    const em = this.deps.orm.em.fork();
    const row = isUuid(id) ? await em.findOne(entity, { id, user: principal.userId }) : null;
    if (!row) throw AppError.notFound(what);
    await this.deps.supervisors.stop(key);
    await beforeForget?.(row);
    await em.nativeDelete(entity, { id });
    // The row is gone already; leftover files are only logged.
    await rm(dir, { recursive: true, force: true }).catch((err) =>
      this.deps.log.error({ err, dir }, 'could not remove the files of a deleted chat bridge process'),
    );
  }
}
