import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'smol-toml';
import { AppError } from '../common/errors';
import type { PlatformSettings } from './chat-bridge.entity';

export interface MatterbridgeFiles {
  dir: string;
  config: string;
  log: string;
}

export function matterbridgeFiles(dataDir: string, id: string): MatterbridgeFiles {
  const dir = path.join(dataDir, 'chat-bridge', 'matterbridge', id);
  return { dir, config: path.join(dir, 'matterbridge.toml'), log: path.join(dir, 'process.log') };
}

export function matterbridgeArgv(bin: string, files: MatterbridgeFiles): string[] {
  return [bin, '-conf', files.config];
}

type AccountSettings = Record<string, string | boolean>;

interface Rule {
  pattern: RegExp;
  hint: string;
}

interface Platform {
  channel: Rule;
  /** Settings the platform needs besides token and channel, with their rules. */
  settings: Partial<Record<keyof PlatformSettings, Rule>>;
  tokenOptional?: boolean;
  /** The account section, with matterbridge's key names. */
  account(token: string, settings: PlatformSettings, channel: string): AccountSettings;
  /** The channel as the gateway names it, when it differs from the one given. */
  gatewayChannel?(channel: string): string;
}

const HOST_PORT: Rule = {
  pattern: /^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?:\d{1,5}$/i,
  hint: 'a host name and port, like chat.example.org:6697',
};

const PLATFORMS: Record<string, Platform> = {
  discord: {
    channel: { pattern: /^(?:ID:\d{5,25}|[^\s#:]{1,100})$/u, hint: 'a channel name or ID:<channel id>' },
    settings: { server: { pattern: /^.{1,100}$/u, hint: 'the server (guild) name or ID:<guild id>' } },
    account: (token, s) => ({ Token: token, Server: s.server! }),
  },
  slack: {
    channel: {
      pattern: /^(?:ID:[A-Z0-9]{6,20}|[a-z0-9][a-z0-9._-]{0,79})$/,
      hint: 'a channel name without # or ID:<channel id>',
    },
    settings: {},
    account: (token) => ({ Token: token }),
  },
  telegram: {
    channel: { pattern: /^-?\d{1,20}$/, hint: 'a numeric chat id, like -1001234567890' },
    settings: {},
    account: (token) => ({ Token: token }),
  },
  mattermost: {
    channel: { pattern: /^[a-z0-9][a-z0-9._-]{0,63}$/, hint: 'a channel name (its URL handle)' },
    settings: {
      server: {
        pattern: /^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?(?::\d{1,5})?$/i,
        hint: 'the Mattermost host name, optionally with :port',
      },
      team: { pattern: /^[a-z0-9][a-z0-9._-]{0,63}$/, hint: 'a team name (its URL handle)' },
    },
    account: (token, s) => ({ Server: s.server!, Team: s.team!, Token: token }),
  },
  irc: {
    channel: { pattern: /^[#&][^\s,:]{1,49}$/, hint: 'a channel name starting with # or &' },
    settings: {
      server: HOST_PORT,
      nick: { pattern: /^[A-Za-z[\]\\`_^{|}][\w[\]\\`^{|}-]{0,29}$/, hint: 'an IRC nickname' },
    },
    tokenOptional: true,
    // The token, when given, is the nick's NickServ password; only port 6667 is plain text.
    account: (token, s) => ({
      Server: s.server!,
      Nick: s.nick!,
      UseTLS: !s.server!.endsWith(':6667'),
      ...(token ? { NickServNick: s.nick!, NickServPassword: token } : {}),
    }),
  },
  xmpp: {
    channel: {
      pattern: /^[^\s@/"&'<>:]{1,256}@[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$/i,
      hint: 'a group chat address, like room@conference.example.org',
    },
    settings: {
      server: HOST_PORT,
      nick: {
        pattern: /^[^\s@/"&'<>:]{1,256}@[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$/i,
        hint: 'the bot JID',
      },
    },
    // The token is the JID's password; the room's domain is the MUC service.
    account: (token, s, channel) => ({
      Server: s.server!,
      Jid: s.nick!,
      Password: token,
      Muc: channel.split('@')[1],
      Nick: s.nick!.split('@')[0],
    }),
    gatewayChannel: (channel) => channel.split('@')[0],
  },
};

export const PLATFORM_NAMES = Object.keys(PLATFORMS);

/** C0 and C1 controls, DEL and the Unicode line separators: nothing a configuration value needs. */
// eslint-disable-next-line no-control-regex -- control characters are what we refuse
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

export interface BridgeConf {
  platform: string;
  token: string;
  channel: string;
  settings: PlatformSettings;
}

/** Checks `conf` against the platform's rules; every problem is reported at once, per field. */
export function validateBridgeConf(conf: Record<string, unknown>): BridgeConf {
  const problems: Record<string, string> = {};
  const str = (name: string): string | undefined => {
    const v = conf[name];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') problems[`conf.${name}`] = 'must be a string';
    else if (CONTROL.test(v)) problems[`conf.${name}`] = 'must not contain control characters';
    else if (v.length > 4096) problems[`conf.${name}`] = 'is too long';
    else return v;
    return undefined;
  };
  const platformName = str('platform')?.toLowerCase();
  const platform = platformName ? PLATFORMS[platformName] : undefined;
  if (!platformName) problems['conf.platform'] ??= 'is required';
  else if (!platform) problems['conf.platform'] = `must be one of ${PLATFORM_NAMES.join(', ')}`;
  const token = str('token') ?? '';
  const channel = str('channel') ?? '';
  const settings: PlatformSettings = {};
  if (platform) {
    if (!token && !platform.tokenOptional) problems['conf.token'] ??= 'is required';
    if (!channel) problems['conf.channel'] ??= 'is required';
    else if (!platform.channel.pattern.test(channel))
      problems['conf.channel'] ??= `must be ${platform.channel.hint}`;
    for (const [name, rule] of Object.entries(platform.settings) as [keyof PlatformSettings, Rule][]) {
      const value = str(name);
      if (!value) problems[`conf.${name}`] ??= `is required for ${platformName}: ${rule.hint}`;
      else if (!rule.pattern.test(value)) problems[`conf.${name}`] ??= `must be ${rule.hint}`;
      else settings[name] = value;
    }
  }
  if (Object.keys(problems).length) throw AppError.validation(problems);
  return { platform: platformName!, token, channel, settings };
}

export interface MatterbridgeInput {
  /** The gateway's name. */
  networkName: string;
  /** The account name of both sides, `[<protocol>.<account>]`. */
  account: string;
  conf: BridgeConf;
  /** `room`: the room's alias (matterbridge resolves channels as aliases). */
  matrix: { url: string; userId: string; accessToken: string; room: string };
}

/** One gateway joining the platform channel and the user's Matrix room, both ways. */
export function matterbridgeConfig({ networkName, account, conf, matrix }: MatterbridgeInput) {
  const platform = PLATFORMS[conf.platform];
  return {
    general: { RemoteNickFormat: '[{PROTOCOL}] <{NICK}> ' },
    [conf.platform]: { [account]: platform.account(conf.token, conf.settings, conf.channel) },
    matrix: {
      [account]: {
        Server: matrix.url,
        MxID: matrix.userId,
        Token: matrix.accessToken,
        NoHomeServerSuffix: false,
      },
    },
    gateway: [
      {
        name: networkName,
        enable: true,
        inout: [
          {
            account: `${conf.platform}.${account}`,
            channel: platform.gatewayChannel?.(conf.channel) ?? conf.channel,
          },
          { account: `matrix.${account}`, channel: matrix.room },
        ],
      },
    ],
  };
}

/** Writes the configuration, 0600 in a 0700 directory: it holds both sides' credentials. */
export async function writeMatterbridge(files: MatterbridgeFiles, input: MatterbridgeInput): Promise<void> {
  await mkdir(files.dir, { recursive: true, mode: 0o700 });
  await writeFile(files.config, stringify(matterbridgeConfig(input)), { mode: 0o600, flag: 'wx' });
}
