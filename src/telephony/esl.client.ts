import net from 'node:net';
import type { Logger } from '../common/logger';

/**
 * A client of FreeSWITCH's event socket (inbound mode, mod_event_socket): one persistent
 * connection, authenticated with `auth <password>`, subscribed to plain events, reconnecting with
 * capped exponential backoff. Messages are header blocks ended by an empty line, followed by a
 * body when a Content-Length header says so; replies to commands arrive in command order.
 */

export interface EslMessage {
  headers: Record<string, string>;
  body: string;
}

/** The event socket cannot be used now; `retryAfterMs` says when the next attempt is due. */
export class EslUnavailableError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'EslUnavailableError';
  }
}

/** FreeSWITCH answered a command with `-ERR ...`. */
export class EslCommandError extends Error {
  constructor(readonly reply: string) {
    super(`FreeSWITCH refused the command: ${reply}`);
    this.name = 'EslCommandError';
  }
}

export interface EslClientOptions {
  host: string;
  port: number;
  password: string;
  /** Event names subscribed to after authentication (`event plain <names>`). */
  events: string[];
  onEvent: (event: EslMessage) => void;
  maxBackoffMs: number;
  log: Logger;
}

const MIN_BACKOFF_MS = 100;
/** Connecting includes authentication and the event subscription. */
const CONNECT_TIMEOUT_MS = 5000;
/** A command unanswered this long means a dead connection: it is dropped and made again. */
const COMMAND_TIMEOUT_MS = 5000;

/** A header block bigger than this is not FreeSWITCH talking: the connection is dropped. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

/** Splits the byte stream into messages (Content-Length counts bytes, so it works on Buffers). */
export class EslParser {
  private buffer: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): EslMessage[] {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    const messages: EslMessage[] = [];
    for (;;) {
      let start = 0;
      while (start < this.buffer.length && this.buffer[start] === 0x0a) start++;
      const end = this.buffer.indexOf('\n\n', start);
      if (end < 0) {
        if (this.buffer.length > MAX_BUFFERED_BYTES) throw new Error('oversized message header');
        this.buffer = this.buffer.subarray(start);
        return messages;
      }
      const headers = parseHeaders(this.buffer.subarray(start, end).toString('utf8'), false);
      const length = Number(headers['Content-Length'] ?? 0);
      if (!Number.isSafeInteger(length) || length < 0 || length > MAX_BUFFERED_BYTES)
        throw new Error(`bad Content-Length "${headers['Content-Length']}"`);
      if (this.buffer.length < end + 2 + length) {
        this.buffer = this.buffer.subarray(start);
        return messages;
      }
      messages.push({ headers, body: this.buffer.subarray(end + 2, end + 2 + length).toString('utf8') });
      this.buffer = this.buffer.subarray(end + 2 + length);
    }
  }
}

function decodeValue(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function parseHeaders(block: string, urlEncoded: boolean): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of block.split('\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const value = line.slice(colon + 1).trim();
    headers[line.slice(0, colon).trim()] = urlEncoded ? decodeValue(value) : value;
  }
  return headers;
}

/** The body of a `text/event-plain` message: URL-encoded headers, then the event's own body. */
export function parsePlainEvent(body: string): EslMessage {
  const split = body.indexOf('\n\n');
  const headers = parseHeaders(split < 0 ? body : body.slice(0, split), true);
  const length = Number(headers['Content-Length'] ?? 0);
  const rest = split < 0 ? '' : body.slice(split + 2);
  return { headers, body: Buffer.from(rest).subarray(0, length).toString('utf8') };
}

interface Pending {
  resolve: (message: EslMessage) => void;
  reject: (err: Error) => void;
}

type State = 'connecting' | 'ready' | 'waiting' | 'closed';

export class EslClient {
  private state: State = 'waiting';
  private socket: net.Socket | undefined;
  private pending: Pending[] = [];
  private attempt = 0;
  private retryAt = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private lastError = 'not connected yet';
  private ready: Promise<void> = Promise.resolve();
  private settleReady: { resolve: () => void; reject: (err: Error) => void } | undefined;

  constructor(private readonly options: EslClientOptions) {}

  /** Starts connecting; from then on the connection is kept up until close(). */
  start(): void {
    if (this.state === 'waiting' && !this.socket) this.connect();
  }

  /**
   * Runs `bgapi <command>` with the given Job-UUID (its result comes later as a BACKGROUND_JOB
   * event). Fails at once with EslUnavailableError while the connection is down.
   */
  async bgapi(command: string, jobUuid: string): Promise<void> {
    await this.whenReady();
    const reply = await this.send(`bgapi ${command}`, { 'Job-UUID': jobUuid });
    const text = reply.headers['Reply-Text'] ?? '';
    if (!text.startsWith('+OK')) throw new EslCommandError(text || 'no reply text');
  }

  async close(): Promise<void> {
    this.state = 'closed';
    clearTimeout(this.retryTimer);
    const socket = this.socket;
    if (!socket || socket.destroyed) return;
    await new Promise<void>((resolve) => {
      socket.once('close', () => resolve());
      socket.end('exit\n\n');
      setTimeout(() => socket.destroy(), 1000).unref();
    });
  }

  private whenReady(): Promise<void> {
    switch (this.state) {
      case 'ready':
        return Promise.resolve();
      case 'connecting':
        return this.ready;
      case 'closed':
        return Promise.reject(new EslUnavailableError('the event socket client is closed'));
      default:
        return Promise.reject(
          new EslUnavailableError(
            `the FreeSWITCH event socket is unreachable: ${this.lastError}`,
            Math.max(0, this.retryAt - Date.now()),
          ),
        );
    }
  }

  private connect(): void {
    const { host, port, log } = this.options;
    this.state = 'connecting';
    this.ready = new Promise<void>((resolve, reject) => (this.settleReady = { resolve, reject }));
    this.ready.catch(() => undefined); // nobody may be waiting for this attempt
    const socket = net.connect({ host, port });
    this.socket = socket;
    const parser = new EslParser();
    const timer = setTimeout(() => socket.destroy(new Error('timed out connecting')), CONNECT_TIMEOUT_MS);
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    socket.on('data', (chunk: Buffer) => {
      try {
        for (const message of parser.push(chunk)) this.dispatch(message, socket, timer);
      } catch (err) {
        socket.destroy(err as Error);
      }
    });
    socket.on('error', (err) => {
      this.lastError = err.message;
    });
    socket.on('close', () => {
      clearTimeout(timer);
      if (this.socket !== socket) return;
      this.socket = undefined;
      for (const p of this.pending.splice(0))
        p.reject(
          new EslUnavailableError(`the FreeSWITCH event socket connection was lost: ${this.lastError}`),
        );
      const closed = this.state === 'closed';
      const wasReady = this.state === 'ready';
      const delay = closed ? 0 : this.backoff();
      // Requests waiting for this attempt fail now (a no-op when the attempt had succeeded).
      this.settleReady?.reject(
        new EslUnavailableError(`the FreeSWITCH event socket is unreachable: ${this.lastError}`, delay),
      );
      if (closed) return;
      this.state = 'waiting';
      this.retryAt = Date.now() + delay;
      log.warn(
        { host, port, error: this.lastError, retryInMs: delay },
        wasReady ? 'FreeSWITCH event socket lost' : 'FreeSWITCH event socket connection failed',
      );
      this.retryTimer = setTimeout(() => this.connect(), delay);
      this.retryTimer.unref();
    });
  }

  /** Exponential, capped, with jitter so that many processes do not reconnect in step. */
  private backoff(): number {
    const base = Math.min(this.options.maxBackoffMs, MIN_BACKOFF_MS * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.round(base / 2 + (Math.random() * base) / 2);
  }

  private dispatch(message: EslMessage, socket: net.Socket, connectTimer: NodeJS.Timeout): void {
    switch (message.headers['Content-Type']) {
      case 'auth/request':
        void this.authenticate(socket, connectTimer);
        break;
      case 'command/reply':
        this.pending.shift()?.resolve(message);
        break;
      case 'text/event-plain':
        this.options.onEvent(parsePlainEvent(message.body));
        break;
      case 'text/disconnect-notice':
        this.lastError = 'FreeSWITCH closed the connection';
        break;
    }
  }

  private async authenticate(socket: net.Socket, connectTimer: NodeJS.Timeout): Promise<void> {
    try {
      const auth = await this.send(`auth ${this.options.password}`);
      if (!auth.headers['Reply-Text']?.startsWith('+OK'))
        throw new Error(`authentication refused (${auth.headers['Reply-Text'] ?? 'no reply'})`);
      const events = this.options.events.join(' ');
      const subscribed = await this.send(`event plain ${events}`);
      if (!subscribed.headers['Reply-Text']?.startsWith('+OK'))
        throw new Error(`event subscription refused (${subscribed.headers['Reply-Text'] ?? 'no reply'})`);
      clearTimeout(connectTimer);
      this.state = 'ready';
      this.attempt = 0;
      this.options.log.info(
        { host: this.options.host, port: this.options.port },
        'FreeSWITCH event socket connected',
      );
      this.settleReady?.resolve();
    } catch (err) {
      this.lastError = (err as Error).message;
      socket.destroy();
    }
  }

  /** Writes one command; its reply is the next command/reply, since FreeSWITCH answers in order. */
  private send(command: string, headers: Record<string, string> = {}): Promise<EslMessage> {
    const lines = [command, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    // A line break would end the command early and let the rest through as another one.
    if (lines.some((l) => /[\r\n]/.test(l))) throw new Error('refusing to send a command with a line break');
    const socket = this.socket;
    if (!socket) return Promise.reject(new EslUnavailableError('not connected'));
    return new Promise<EslMessage>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.lastError = 'FreeSWITCH did not answer a command in time';
        socket.destroy();
      }, COMMAND_TIMEOUT_MS);
      this.pending.push({
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      socket.write(`${lines.join('\n')}\n\n`);
    });
  }
}
