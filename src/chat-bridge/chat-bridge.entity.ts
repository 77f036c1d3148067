import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique, type Opt } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/**
 * A chat bridge account: its own credentials, unrelated to the platform's users and API keys,
 * mirrored by an account of the same name on the configured Matrix homeserver.
 */
@Entity({ tableName: 'chat_bridge_users' })
export class BridgeUser {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text', unique: true })
  username!: string;

  /** scrypt, see chat-bridge.credentials.ts. */
  @Property({ type: 'text' })
  passwordHash!: string;

  /** `@username:server`, as the homeserver answered it. */
  @Property({ type: 'text' })
  matrixUserId!: string;

  /** The access token the homeserver issued at registration, sealed with BRIDGE_SECRET_KEY. */
  @Property({ type: 'text' })
  accessTokenSealed!: string;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}

/** An `X-API-Key` of a bridge user. Only the SHA-256 of its value is stored. */
@Entity({ tableName: 'chat_bridge_api_keys' })
export class BridgeApiKey {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => BridgeUser, { deleteRule: 'cascade' })
  @Index()
  user!: BridgeUser;

  @Property({ type: 'text', unique: true })
  keyHash!: string;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();

  @Property({ type: 'datetime', nullable: true })
  lastUsedAt: Date | null = null;
}

/** A Dendrite homeserver the bridge runs for a user; files under DATA_DIR/chat-bridge/dendrite/<id>. */
@Entity({ tableName: 'chat_bridge_dendrites' })
@Index({ properties: ['user', 'createdAt'] })
export class DendriteInstance {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => BridgeUser, { deleteRule: 'cascade' })
  user!: BridgeUser;

  /** Its Matrix server name; unique across all users, like the port. */
  @Property({ type: 'text', unique: true })
  hostname!: string;

  @Property({ type: 'integer', unique: true })
  port!: number;

  /** `ed25519:<id>` and the base64 public key of its signing key (operators publish them). */
  @Property({ type: 'text' })
  keyId!: string;

  @Property({ type: 'text' })
  publicKey!: string;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}

/** Settings some platforms need beyond token and channel. */
export interface PlatformSettings {
  server?: string;
  team?: string;
  nick?: string;
}

/** A matterbridge process joining a platform channel and a Matrix room of the user. */
@Entity({ tableName: 'chat_bridge_matterbridges' })
@Unique({ properties: ['user', 'name'] })
@Index({ properties: ['user', 'createdAt'] })
export class Matterbridge {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => BridgeUser, { deleteRule: 'cascade' })
  user!: BridgeUser;

  @Property({ type: 'text' })
  name!: string;

  @Property({ type: 'text' })
  networkName!: string;

  @Property({ type: 'text' })
  platform!: string;

  @Property({ type: 'text' })
  channel!: string;

  @Property({ type: 'json' })
  settings: Opt<PlatformSettings> = {};

  /** The platform token, sealed with BRIDGE_SECRET_KEY; never answered. */
  @Property({ type: 'text' })
  tokenSealed!: string;

  @Property({ type: 'text' })
  matrixRoomId!: string;

  /** `#<network name>:<server name>`: matterbridge joins rooms by alias. */
  @Property({ type: 'text' })
  matrixRoomAlias!: string;

  @Property({ type: 'datetime' })
  createdAt: Opt<Date> = new Date();
}
