import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { AppError } from '../common/errors';

/**
 * Addresses a webhook must never reach: loopback, private, link-local (cloud metadata services
 * live there: 169.254.169.254, fd00:ec2::254), carrier-grade NAT (100.100.100.200), multicast,
 * documentation, benchmarking and reserved ranges, for IPv4 and IPv6.
 */
const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(net, prefix, 'ipv6');

/** The IPv4 address an IPv6 address stands for (mapped, NAT64, 6to4, compatible), if any. */
function embeddedIpv4(address: string): string | null {
  const groups = expandIpv6(address);
  if (!groups) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (zeros(0, 5) && groups[5] === 0xffff) return v4(groups[6], groups[7]); // ::ffff:a.b.c.d
  if (zeros(0, 6) && (groups[6] || groups[7] > 1)) return v4(groups[6], groups[7]); // ::a.b.c.d
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return v4(groups[6], groups[7]); // 64:ff9b::/96
  if (groups[0] === 0x2002) return v4(groups[1], groups[2]); // 2002::/16 (6to4)
  return null;
}

/** The eight 16-bit groups of an IPv6 address, or null. */
function expandIpv6(address: string): number[] | null {
  let text = address.toLowerCase().split('%')[0];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1].split('.').map(Number);
    text = text.slice(0, -dotted[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = part(head);
  const t = part(tail);
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill(0), ...t];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff)
    ? groups
    : null;
}

/** Whether an IP address is one webhooks must not reach. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true; // not an address at all: refuse
  const v4 = embeddedIpv4(address);
  return (v4 !== null && blocked.check(v4, 'ipv4')) || blocked.check(address.split('%')[0], 'ipv6');
}

export interface AddressPolicy {
  /** `host:port` entries (lower case; IPv6 in brackets) that may be private. */
  allowPrivate: readonly string[];
  allowHttp: boolean;
}

const MAX_URL_LENGTH = 2048;

/** The URL's host as `WEBHOOK_ALLOW_PRIVATE` writes it, with its port. */
function hostPort(host: string, port: number): string {
  return `${isIP(host) === 6 && !host.startsWith('[') ? `[${host}]` : host}:${port}`.toLowerCase();
}

function portOf(url: URL): number {
  return Number(url.port || (url.protocol === 'https:' ? 443 : 80));
}

/** Whether `address` may be reached for `url`: public, or allowed by name or by address with the port. */
export function mayReach(url: URL, address: string, policy: AddressPolicy): boolean {
  if (!isPrivateAddress(address)) return true;
  const port = portOf(url);
  return (
    policy.allowPrivate.includes(hostPort(url.hostname, port)) ||
    policy.allowPrivate.includes(hostPort(address, port))
  );
}

/**
 * A webhook URL as a client gives it: https (http only with WEBHOOK_ALLOW_HTTP), no credentials,
 * at most 2048 characters. Throws VALIDATION_FAILED naming `field`.
 */
export function parseWebhookUrl(text: string, policy: AddressPolicy, field = 'webhook'): URL {
  const fail = (why: string) => AppError.validation({ [field]: why });
  if (text.length > MAX_URL_LENGTH) throw fail(`must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw fail('must be an absolute https URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp))
    throw fail(policy.allowHttp ? 'must be an http(s) URL' : 'must be an https URL');
  if (url.username || url.password) throw fail('must not contain credentials');
  if (!url.hostname) throw fail('must name a host');
  return url;
}

/** The addresses a host name resolves to (an address resolves to itself). */
function resolve(host: string): Promise<LookupAddress[]> {
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare)) return Promise.resolve([{ address: bare, family: isIP(bare) }]);
  return new Promise((res, rej) =>
    dnsLookup(bare, { all: true, verbatim: true }, (err, all) => (err ? rej(err) : res(all))),
  );
}

/**
 * Refuses a URL whose host is, or resolves to, an address webhooks must not reach. Checked when a
 * webhook is given, so the mistake is seen at once; the connection itself checks again
 * (`guardedLookup`), since a name may resolve differently later.
 */
export async function assertReachable(url: URL, policy: AddressPolicy, field = 'webhook'): Promise<void> {
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(url.hostname);
  } catch {
    throw AppError.validation({ [field]: `its host ${url.hostname} does not resolve` });
  }
  const refused = addresses.find((a) => !mayReach(url, a.address, policy));
  if (refused)
    throw AppError.validation({
      [field]: `its host resolves to ${refused.address}, a loopback, private, link-local or reserved address`,
    });
}

/** Why a connection was refused before it was made. */
export class RefusedAddress extends Error {}

/**
 * A `lookup` for http(s).request that resolves the name and refuses the connection when any
 * address it resolves to may not be reached: the address checked is the address connected to.
 * (Addresses written in the URL are not looked up by Node; `assertReachable` checks those.)
 */
export function guardedLookup(url: URL, policy: AddressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (all) => {
        const refused = all.find((a) => !mayReach(url, a.address, policy));
        if (refused)
          return callback(
            new RefusedAddress(`${hostname} resolves to ${refused.address}, which webhooks may not reach`),
            '',
            0,
          );
        if ((options as { all?: boolean }).all)
          return (callback as (e: null, a: LookupAddress[]) => void)(null, all);
        callback(null, all[0].address, all[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}
