import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { AppError } from '../common/errors';
import type { Homeserver } from './homeserver.port';

/** The bridge's input rules, and what its accounts and its processes share. */

const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** The sealing context of a bridge user's Matrix access token. */
export const accessTokenContext = (userId: string) => `chat-bridge:user:${userId}:access-token`;

export function requireString(value: unknown, field: string): string {
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
export function conflictOn(err: unknown, messages: Record<string, string>): unknown {
  if (!(err instanceof UniqueConstraintViolationException)) return err;
  const constraint = (err as { constraint?: string }).constraint ?? '';
  const key = Object.keys(messages).find((k) => constraint.includes(k));
  return new AppError('CONFLICT', messages[key ?? Object.keys(messages)[0]]);
}

/** The configured homeserver, or 503 when there is none. */
export function requireHomeserver(homeserver: Homeserver | null): Homeserver {
  if (!homeserver)
    throw new AppError('UNAVAILABLE', 'no Matrix homeserver is configured (set MATRIX_HOMESERVER_URL)');
  return homeserver;
}
