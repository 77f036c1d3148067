import { generateKeyPairSync, randomBytes, randomInt } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import YAML from 'yaml';

export interface DendriteFiles {
  dir: string;
  config: string;
  key: string;
  log: string;
}

export function dendriteFiles(dataDir: string, id: string): DendriteFiles {
  const dir = path.join(dataDir, 'chat-bridge', 'dendrite', id);
  return {
    dir,
    config: path.join(dir, 'dendrite.yaml'),
    key: path.join(dir, 'matrix_key.pem'),
    log: path.join(dir, 'process.log'),
  };
}

export interface SigningKey {
  /** `ed25519:<6 letters or digits>`. */
  keyId: string;
  /** Unpadded base64, as Matrix publishes keys. */
  publicKey: string;
  /** Dendrite's key file: a PEM block holding the 32-byte seed, with a `Key-ID` header. */
  pem: string;
}

const KEY_ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export function generateSigningKey(): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url');
  const x = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  // Random, not derived from the seed: a key id is public.
  const keyId = `ed25519:${Array.from({ length: 6 }, () => KEY_ID_ALPHABET[randomInt(KEY_ID_ALPHABET.length)]).join('')}`;
  const pem = [
    '-----BEGIN MATRIX PRIVATE KEY-----',
    `Key-ID: ${keyId}`,
    '',
    seed.toString('base64'),
    '-----END MATRIX PRIVATE KEY-----',
    '',
  ].join('\n');
  return { keyId, publicKey: x.toString('base64').replace(/=+$/, ''), pem };
}

/** The databases a Dendrite monolith needs, one SQLite file each (the global pool is PostgreSQL only). */
const DATABASES = [
  'federationapi',
  'keyserver',
  'mediaapi',
  'mscs',
  'relayapi',
  'roomserver',
  'syncapi',
  'userapi',
];

/** A Dendrite configuration (version 2 layout) keeping all its state under `files.dir`. */
export function dendriteConfig(serverName: string, files: DendriteFiles, registrationSharedSecret: string) {
  const db = (name: string) => ({ connection_string: `file:${path.join(files.dir, `dendrite_${name}.db`)}` });
  const [federationapi, keyserver, mediaapi, mscs, relayapi, roomserver, syncapi, userapi] =
    DATABASES.map(db);
  return {
    version: 2,
    global: {
      server_name: serverName,
      private_key: files.key,
      key_validity_period: '168h0m0s',
      trusted_third_party_id_servers: [],
      disable_federation: false,
      presence: { enable_inbound: false, enable_outbound: false },
      report_stats: { enabled: false },
      jetstream: { storage_path: path.join(files.dir, 'jetstream'), topic_prefix: 'Dendrite' },
      metrics: { enabled: false },
      dns_cache: { enabled: false },
    },
    app_service_api: { disable_tls_validation: false, config_files: [] },
    client_api: {
      registration_disabled: true,
      guests_disabled: true,
      registration_shared_secret: registrationSharedSecret,
      rate_limiting: { enabled: true, threshold: 20, cooloff_ms: 500 },
    },
    federation_api: { database: federationapi, key_perspectives: [] },
    key_server: { database: keyserver },
    media_api: {
      database: mediaapi,
      base_path: path.join(files.dir, 'media'),
      max_file_size_bytes: 10485760,
    },
    mscs: { database: mscs, mscs: [] },
    relay_api: { database: relayapi },
    room_server: { database: roomserver },
    sync_api: {
      database: syncapi,
      search: { enabled: false, index_path: path.join(files.dir, 'searchindex') },
    },
    user_api: { account_database: userapi, bcrypt_cost: 10 },
    logging: [
      { type: 'std', level: 'info' },
      { type: 'file', level: 'info', params: { path: path.join(files.dir, 'logs') } },
    ],
  };
}

/** Writes the signing key and the configuration (both 0600, in a 0700 directory). */
export async function writeDendriteInstance(files: DendriteFiles, serverName: string, key: SigningKey) {
  const config = dendriteConfig(serverName, files, randomBytes(32).toString('base64url'));
  await mkdir(files.dir, { recursive: true, mode: 0o700 });
  await writeFile(files.key, key.pem, { mode: 0o600, flag: 'wx' });
  await writeFile(files.config, YAML.stringify(config), { mode: 0o600, flag: 'wx' });
}

/** Dendrite's command line: the monolith takes its listen address as a flag. */
export function dendriteArgv(bin: string, files: DendriteFiles, host: string, port: number): string[] {
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return [bin, '--config', files.config, '--http-bind-address', address];
}
