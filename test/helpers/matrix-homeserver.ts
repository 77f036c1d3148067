import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

interface Account {
  password: string;
  tokens: Set<string>;
}

/**
 * A small Matrix homeserver for tests, speaking the parts of the real protocol the bridge uses:
 * Synapse's shared-secret registration (single-use nonces, HMAC-SHA1 checked like Synapse does),
 * `m.login.password` login, room creation with an alias and alias removal.
 */
export class TestHomeserver {
  readonly accounts = new Map<string, Account>();
  readonly rooms = new Map<string, { creator: string; name: string; preset: string }>();
  /** Room aliases (`#local:server`) to room ids, with who created each alias. */
  readonly aliases = new Map<string, { roomId: string; creator: string }>();
  readonly nonces = new Map<string, number>();
  /** Every registration attempt that reached the POST handler, with its answer status. */
  readonly registrations: { username: string; status: number }[] = [];

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
    readonly serverName: string,
    private readonly sharedSecret: string,
  ) {}

  static async start(sharedSecret: string, serverName: string): Promise<TestHomeserver> {
    const server = http.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const self = new TestHomeserver(server, `http://127.0.0.1:${port}`, serverName, sharedSecret);
    server.on('request', (req, res) => void self.handle(req, res));
    return self;
  }

  /** An account made on the homeserver directly (not through the bridge). */
  addAccount(localpart: string, password: string): void {
    this.accounts.set(localpart, { password, tokens: new Set() });
  }

  /** The password changed on the homeserver (say, in a Matrix client). */
  setPassword(localpart: string, password: string): void {
    this.accounts.get(localpart)!.password = password;
  }

  userId(localpart: string): string {
    return `@${localpart}:${this.serverName}`;
  }

  /** The registration MAC as Synapse computes it. */
  mac(nonce: string, username: string, password: string, admin = false): string {
    return createHmac('sha1', this.sharedSecret)
      .update(nonce)
      .update('\0')
      .update(username)
      .update('\0')
      .update(password)
      .update('\0')
      .update(admin ? 'admin' : 'notadmin')
      .digest('hex');
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const error = (status: number, errcode: string, message: string) =>
      send(status, { errcode, error: message });
    let raw = '';
    for await (const chunk of req) raw += chunk;
    let body: Record<string, unknown> = {};
    if (raw) {
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return error(400, 'M_NOT_JSON', 'Content not JSON.');
      }
    }
    const route = `${req.method} ${req.url}`;
    if (route === 'GET /_synapse/admin/v1/register') {
      const nonce = randomBytes(64).toString('hex');
      this.nonces.set(nonce, Date.now());
      return send(200, { nonce });
    }
    if (route === 'POST /_synapse/admin/v1/register') return this.register(body, send, error);
    if (route === 'POST /_matrix/client/v3/login') return this.login(body, send, error);
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const owner = [...this.accounts].find(([, a]) => token && a.tokens.has(token))?.[0];
    if (route === 'POST /_matrix/client/v3/createRoom') {
      if (!owner) return error(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token.');
      const alias =
        typeof body.room_alias_name === 'string' ? `#${body.room_alias_name}:${this.serverName}` : undefined;
      if (alias && this.aliases.has(alias)) return error(400, 'M_ROOM_IN_USE', 'Room alias already taken');
      const roomId = `!${randomBytes(9).toString('base64url')}:${this.serverName}`;
      this.rooms.set(roomId, {
        creator: this.userId(owner),
        name: String(body.name),
        preset: String(body.preset),
      });
      if (alias) this.aliases.set(alias, { roomId, creator: this.userId(owner) });
      return send(200, { room_id: roomId });
    }
    const directory = /^DELETE \/_matrix\/client\/v3\/directory\/room\/([^/?]+)$/.exec(route);
    if (directory) {
      if (!owner) return error(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token.');
      const alias = decodeURIComponent(directory[1]);
      const entry = this.aliases.get(alias);
      if (!entry) return error(404, 'M_NOT_FOUND', 'Room alias not found');
      if (entry.creator !== this.userId(owner))
        return error(403, 'M_FORBIDDEN', 'You may not delete this alias');
      this.aliases.delete(alias);
      return send(200, {});
    }
    error(404, 'M_UNRECOGNIZED', 'Unrecognized request');
  }

  private register(
    body: Record<string, unknown>,
    send: (status: number, body: unknown) => void,
    error: (status: number, errcode: string, message: string) => void,
  ): void {
    const answer = (status: number, errcode: string, message: string) => {
      this.registrations.push({ username: String(body.username), status });
      error(status, errcode, message);
    };
    // Synapse's checks, in its order: the nonce is used up even when the rest is wrong.
    for (const [nonce, at] of this.nonces) if (Date.now() - at > 60_000) this.nonces.delete(nonce);
    if (typeof body.nonce !== 'string') return answer(400, 'M_BAD_JSON', 'nonce must be specified');
    if (!this.nonces.delete(body.nonce)) return answer(400, 'M_UNKNOWN', 'unrecognised nonce');
    const { username, password, mac } = body;
    if (typeof username !== 'string' || username.length > 512 || username.includes('\0'))
      return answer(400, 'M_UNKNOWN', 'Invalid username');
    if (typeof password !== 'string' || password.length > 512 || password.includes('\0'))
      return answer(400, 'M_UNKNOWN', 'Invalid password');
    if (typeof mac !== 'string') return answer(400, 'M_BAD_JSON', 'mac must be specified');
    const want = Buffer.from(this.mac(body.nonce, username, password, Boolean(body.admin)));
    const got = Buffer.from(mac);
    if (want.length !== got.length || !timingSafeEqual(want, got))
      return answer(403, 'M_UNKNOWN', 'HMAC incorrect');
    const localpart = username.toLowerCase();
    if (!/^[a-z0-9._=\-/]+$/.test(localpart))
      return answer(400, 'M_INVALID_USERNAME', "User ID can only contain characters a-z, 0-9, or '=_-./'");
    if (this.accounts.has(localpart)) return answer(400, 'M_USER_IN_USE', 'User ID already taken.');
    const accessToken = `syt_${randomBytes(16).toString('hex')}`;
    this.accounts.set(localpart, { password, tokens: new Set([accessToken]) });
    this.registrations.push({ username, status: 200 });
    send(200, {
      user_id: this.userId(localpart),
      home_server: this.serverName,
      access_token: accessToken,
      device_id: randomBytes(5).toString('hex').toUpperCase(),
    });
  }

  private login(
    body: Record<string, unknown>,
    send: (status: number, body: unknown) => void,
    error: (status: number, errcode: string, message: string) => void,
  ): void {
    if (body.type !== 'm.login.password') return error(400, 'M_UNKNOWN', 'Unknown login type');
    const identifier = body.identifier as { type?: string; user?: string } | undefined;
    if (identifier?.type !== 'm.id.user' || typeof identifier.user !== 'string')
      return error(400, 'M_UNKNOWN', 'Invalid identifier');
    const localpart = identifier.user.replace(new RegExp(`^@(.*):${this.serverName}$`), '$1');
    const account = this.accounts.get(localpart);
    if (!account || account.password !== body.password)
      return error(403, 'M_FORBIDDEN', 'Invalid username or password');
    const accessToken = `syt_${randomBytes(16).toString('hex')}`;
    account.tokens.add(accessToken);
    send(200, {
      user_id: this.userId(localpart),
      access_token: accessToken,
      device_id: typeof body.device_id === 'string' ? body.device_id : 'NEWDEVICE',
      home_server: this.serverName,
    });
  }
}
