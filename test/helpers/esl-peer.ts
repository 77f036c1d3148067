import { randomUUID } from 'node:crypto';
import net from 'node:net';

/**
 * A stand-in for FreeSWITCH's event socket (mod_event_socket, inbound mode), speaking its wire
 * protocol: `auth/request` on connect, `auth <password>`, `event plain ...`, `bgapi ...` answered
 * with a command/reply carrying the Job-UUID and then a BACKGROUND_JOB event, `exit`. It records
 * the API commands it received.
 */
export class EslPeer {
  /** Every `bgapi` command line received (without the `bgapi ` prefix), with its Job-UUID header. */
  readonly commands: { command: string; jobUuid: string | undefined }[] = [];
  /** Authenticated connections so far. */
  logins = 0;
  private readonly waiters: { ready: () => boolean; resolve: () => void }[] = [];
  port = 0;
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();

  private constructor(private readonly password: string) {}

  static async start(password = 'ClueCon'): Promise<EslPeer> {
    const peer = new EslPeer(password);
    await peer.listen(0);
    return peer;
  }

  get openConnections(): number {
    return this.sockets.size;
  }

  /** Resolves once `ready()` holds; checked again whenever a connection logs in or closes. */
  waitUntil(ready: () => boolean): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ ready, resolve }));
  }

  private changed(): void {
    for (const w of this.waiters.filter((w) => w.ready())) {
      this.waiters.splice(this.waiters.indexOf(w), 1);
      w.resolve();
    }
  }

  /** Stops listening and drops every connection, like a FreeSWITCH that went away. */
  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }

  /** Listens again on the same port. */
  restart(): Promise<void> {
    return this.listen(this.port);
  }

  private listen(port: number): Promise<void> {
    this.server = net.createServer((socket) => this.serve(socket));
    return new Promise((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, '127.0.0.1', () => {
        this.port = (this.server!.address() as net.AddressInfo).port;
        resolve();
      });
    });
  }

  private serve(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => {
      this.sockets.delete(socket);
      this.changed();
    });
    socket.on('error', () => undefined);
    let authenticated = false;
    let buffer = '';
    const reply = (text: string, headers: Record<string, string> = {}) =>
      socket.write(
        `Content-Type: command/reply\nReply-Text: ${text}\n${Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}\n`)
          .join('')}\n`,
      );
    const goodbye = () => {
      const notice = 'Disconnected, goodbye.\nSee you at ClueCon! http://www.cluecon.com/\n';
      socket.end(
        `Content-Type: text/disconnect-notice\nContent-Length: ${Buffer.byteLength(notice)}\n\n${notice}`,
      );
    };
    socket.write('Content-Type: auth/request\n\n');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const [line, ...headerLines] = buffer.slice(0, end).split('\n');
        buffer = buffer.slice(end + 2);
        const headers = Object.fromEntries(
          headerLines.map((h) => [h.split(':')[0], h.slice(h.indexOf(':') + 1).trim()]),
        );
        if (!authenticated) {
          if (line === `auth ${this.password}`) {
            authenticated = true;
            reply('+OK accepted');
            this.logins++;
            this.changed();
          } else {
            reply('-ERR invalid');
            goodbye();
          }
        } else if (line.startsWith('event plain ')) {
          reply('+OK event listener enabled plain');
        } else if (line.startsWith('bgapi ')) {
          const command = line.slice('bgapi '.length);
          const jobUuid = headers['Job-UUID'] ?? randomUUID();
          this.commands.push({ command, jobUuid: headers['Job-UUID'] });
          reply(`+OK Job-UUID: ${jobUuid}`, { 'Job-UUID': jobUuid });
          setImmediate(() => this.sendBackgroundJob(socket, jobUuid, command));
        } else if (line === 'exit') {
          reply('+OK bye');
          goodbye();
        } else {
          reply('-ERR command not found');
        }
      }
    });
  }

  /** Reports an originate as answered: `+OK <uuid of the call>`. */
  private sendBackgroundJob(socket: net.Socket, jobUuid: string, command: string): void {
    const result = `+OK ${/origination_uuid=([0-9a-f-]{36})/.exec(command)?.[1] ?? randomUUID()}\n`;
    const [name, ...args] = command.split(' ');
    const headers = {
      'Event-Name': 'BACKGROUND_JOB',
      'Core-UUID': 'c7bd1e44-5e1b-4f0e-a8a5-3a4c3b1f7d11',
      'FreeSWITCH-Hostname': 'pbx1',
      'Event-Date-Local': '2026-11-22 10:15:03',
      'Event-Calling-File': 'mod_event_socket.c',
      'Job-UUID': jobUuid,
      'Job-Command': name,
      'Job-Command-Arg': args.join(' '),
      'Content-Length': String(Buffer.byteLength(result)),
    };
    const body = `${Object.entries(headers)
      .map(([k, v]) => `${k}: ${encodeURIComponent(v)}`)
      .join('\n')}\n\n${result}`;
    if (!socket.destroyed)
      socket.write(`Content-Length: ${Buffer.byteLength(body)}\nContent-Type: text/event-plain\n\n${body}`);
  }
}
