import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'media-platform' },
    redact: ['req.headers.authorization', 'req.headers.cookie'],
  });
}
