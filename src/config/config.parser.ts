import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_PRICES, parsePriceList, type PriceList } from '../common/price-list';
import { parseMachineTypes, type MachineTypes } from '../common/machine-types';
import { parse as parseYaml } from 'yaml';

/** An owner as mapping files and lists name it. */
const OWNER_KEY = /^(user|team):[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * How configuration values are read and checked: a Parser over the environment `src/config.ts`
 * hands it (this folder never reads process.env itself), collecting every problem so that a bad
 * start names them all at once.
 */

export type Env = Record<string, string | undefined>;

/** An inclusive range of numbers (phone numbers or extensions) of a telephony pool. */
export interface NumberRange {
  from: number;
  to: number;
}

/** Pool limits: a typo such as an extra digit should fail the start, not create a huge pool. */
export const MAX_POOL_RANGE_SIZE = 1_000_000;
export const MAX_POOL_ENTRIES = 1000;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

export { OWNER_KEY };

export class Parser {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  str(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  int(name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < min || n > max) {
      this.problems.push(`${name}: expected an integer between ${min} and ${max}, got "${v}"`);
      return fallback;
    }
    return n;
  }

  bool(name: string, fallback: boolean): boolean {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    this.problems.push(`${name}: expected true or false, got "${v}"`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(v)) {
      this.problems.push(`${name}: expected one of ${allowed.join(', ')}, got "${v}"`);
      return fallback;
    }
    return v as T;
  }

  /** A URL without trailing slashes, unless `exact` (an OIDC issuer is compared character for character). */
  url(
    name: string,
    fallback: string | undefined,
    protocols = ['http:', 'https:'],
    exact = false,
  ): string | undefined {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    try {
      const u = new URL(v);
      if (!protocols.includes(u.protocol)) throw new Error('protocol');
      return exact ? v : v.replace(/\/+$/, '');
    } catch {
      this.problems.push(`${name}: expected a URL (${protocols.join(' or ')}), got "${v}"`);
      return fallback;
    }
  }

  /** A string matching `pattern` (anchored), described by `what` when it does not. */
  matching(name: string, pattern: RegExp, what: string): string | undefined {
    const v = this.raw(name);
    if (v !== undefined && !pattern.test(v)) {
      this.problems.push(`${name}: expected ${what}, got "${v}"`);
      return undefined;
    }
    return v;
  }

  /**
   * A pool of numbers: comma-separated single values and `from-to` ranges of digits (at most 15,
   * no leading zero, both ends of a range the same length), without overlaps.
   */
  ranges(name: string, fallback = ''): NumberRange[] {
    const parts = (this.raw(name) ?? fallback)
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const problem = (what: string) => {
      this.problems.push(`${name}: ${what}`);
      return [];
    };
    if (parts.length > MAX_POOL_ENTRIES) return problem(`at most ${MAX_POOL_ENTRIES} entries`);
    const ranges: NumberRange[] = [];
    for (const part of parts) {
      const m = /^([1-9]\d{0,14})(?:-([1-9]\d{0,14}))?$/.exec(part);
      if (!m) return problem(`"${part}" is not digits (at most 15, no leading zero) or a range of them`);
      const [from, to] = [Number(m[1]), Number(m[2] ?? m[1])];
      if (m[2] && m[1].length !== m[2].length)
        return problem(`both ends of "${part}" must have the same number of digits`);
      if (to < from) return problem(`"${part}" ends before it starts`);
      if (to - from + 1 > MAX_POOL_RANGE_SIZE)
        return problem(`"${part}" holds more than ${MAX_POOL_RANGE_SIZE} values`);
      ranges.push({ from, to });
    }
    const sorted = [...ranges].sort((a, b) => a.from - b.from);
    for (let i = 1; i < sorted.length; i++) {
      if (sorted[i].from <= sorted[i - 1].to)
        return problem(
          `${sorted[i - 1].from}-${sorted[i - 1].to} and ${sorted[i].from}-${sorted[i].to} overlap`,
        );
    }
    return ranges;
  }

  /** A path to an executable file, resolved to an absolute path. */
  executable(name: string): string | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const file = path.resolve(v);
    try {
      if (!statSync(file).isFile()) throw new Error('not a file');
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      this.problems.push(`${name}: "${v}" is not an executable file`);
      return undefined;
    }
  }

  /** 32 bytes given as 64 hex digits or base64 (standard or URL alphabet). */
  key32(name: string): Buffer | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    const key = /^[0-9a-fA-F]{64}$/.test(v)
      ? Buffer.from(v, 'hex')
      : /^[A-Za-z0-9+/_-]{43}=?$/.test(v)
        ? Buffer.from(v, 'base64')
        : undefined;
    if (key?.length !== 32) {
      this.problems.push(`${name}: expected 32 bytes as 64 hex digits or base64`);
      return undefined;
    }
    return key;
  }

  /** A price list file (JSON or YAML, docs/billing.md); unset: the built-in one. */
  prices(name: string): PriceList {
    return this.file(name, parsePriceList, DEFAULT_PRICES);
  }

  /** A machine types file (JSON or YAML, docs/executors.md); unset: null. */
  machineTypes(name: string): MachineTypes | null {
    return this.file(name, parseMachineTypes, null);
  }

  /** A file named by `name`, parsed; unset, unreadable or invalid: `fallback` (and a problem). */
  private file<T>(name: string, parse: (text: string) => T, fallback: T): T {
    const file = this.raw(name);
    if (file === undefined) return fallback;
    try {
      return parse(readFileSync(file, 'utf8'));
    } catch (err) {
      const { code, message } = err as NodeJS.ErrnoException;
      this.problems.push(`${name}: ${code ? `cannot read "${file}" (${code})` : `"${file}": ${message}`}`);
      return fallback;
    }
  }

  /** A comma-separated list whose every item matches `pattern`. */
  listOf(name: string, pattern: RegExp, what: string): string[] {
    const items = this.list(name);
    const bad = items.filter((i) => !pattern.test(i));
    if (bad.length)
      this.problems.push(`${name}: expected ${what}, got ${bad.map((b) => `"${b}"`).join(', ')}`);
    return items.filter((i) => pattern.test(i));
  }

  /** Browser origins (`scheme://host[:port]`, exactly as browsers send them), or `*`. */
  origins(name: string): string[] {
    const origins = this.list(name);
    for (const o of origins) {
      if (o === '*') continue;
      let ok: boolean;
      try {
        const u = new URL(o);
        ok = ['http:', 'https:'].includes(u.protocol) && u.origin === o && !o.includes('*');
      } catch {
        ok = false;
      }
      if (!ok) this.problems.push(`${name}: "${o}" is not an origin such as https://app.example.com`);
    }
    return origins;
  }

  num(name: string, fallback: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!/^\d+(\.\d+)?$/.test(v) || n < min || n > max) {
      this.problems.push(`${name}: expected a number between ${min} and ${max}, got "${v}"`);
      return fallback;
    }
    return n;
  }

  /** `key=value,...`: each key matching `key`, each value `value`. */
  pairs(name: string, key: RegExp, value: RegExp, what: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const item of this.list(name)) {
      const at = item.indexOf('=');
      const [k, v] = [item.slice(0, at).trim(), item.slice(at + 1).trim()];
      if (at < 0 || !key.test(k) || !value.test(v)) this.problems.push(`${name}: "${item}" is not ${what}`);
      else out[k] = v;
    }
    return out;
  }

  /** A file mapping owners (`user:<id>`, `team:<id>`) to names, as JSON or YAML. */
  ownerMap(name: string, value: RegExp): Record<string, string> {
    return this.file(
      name,
      (text) => {
        const map: unknown = parseYaml(text);
        if (!map || typeof map !== 'object' || Array.isArray(map)) throw new Error('expected a mapping');
        for (const [k, v] of Object.entries(map))
          if (!OWNER_KEY.test(k) || typeof v !== 'string' || !value.test(v))
            throw new Error(`"${k}": expected user:<id> or team:<id> mapped to a name`);
        return map as Record<string, string>;
      },
      {},
    );
  }

  list(name: string): string[] {
    return (this.raw(name) ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  }
}
