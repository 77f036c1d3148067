import { rm } from 'node:fs/promises';
import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import { isUuid } from '../common/ids';
import type { Logger } from '../common/logger';
import { findPage, mapPage, type Page, type PageArgs } from '../common/pagination';
import type { SecretBox } from '../common/sealing';
import type { BridgePrincipal } from './chat-bridge.accounts';
import { BridgeUser, DendriteInstance, Matterbridge } from './chat-bridge.entity';
import {
  accessTokenContext,
  conflictOn,
  requireHomeserver,
  requireString,
  validateHostname,
  validatePort,
} from './chat-bridge.rules';
import type { SupervisedState, SupervisorGroup } from './chat-bridge.supervisor';
import { dendriteArgv, dendriteFiles, generateSigningKey, writeDendriteInstance } from './dendrite.config';
import type { Homeserver } from './homeserver.port';
import {
  matterbridgeArgv,
  matterbridgeFiles,
  validateBridgeConf,
  writeMatterbridge,
} from './matterbridge.config';

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

const BRIDGE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

const platformTokenContext = (bridgeId: string) => `chat-bridge:matterbridge:${bridgeId}:token`;
const dendriteKey = (id: string) => `dendrite:${id}`;
const matterbridgeKey = (id: string) => `matterbridge:${id}`;

/** The Dendrite instances and bridges of the bridge's users, and the processes that run them. */
export class ChatBridgeService {
  constructor(private readonly deps: ChatBridgeDeps) {}

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
    const homeserver = requireHomeserver(this.deps.homeserver);
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

  /** Best effort: a homeserver that is down must not keep a bridge from being deleted. */
  private async releaseAlias(principal: BridgePrincipal, bridge: Matterbridge): Promise<void> {
    try {
      const user = await this.deps.orm.em.fork().findOneOrFail(BridgeUser, principal.userId);
      const accessToken = this.deps.secrets.open(user.accessTokenSealed, accessTokenContext(user.id));
      await requireHomeserver(this.deps.homeserver).deleteAlias(accessToken, bridge.matrixRoomAlias);
    } catch (err) {
      this.deps.log.warn({ err, alias: bridge.matrixRoomAlias }, 'could not remove the Matrix room alias');
    }
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
