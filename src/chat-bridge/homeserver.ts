import type { Config } from '../config';
import { MatrixHomeserver } from './matrix.homeserver';

export interface MatrixAccount {
  userId: string;
  accessToken: string;
}

/** What the bridge needs from a Matrix homeserver. */
export interface Homeserver {
  /** The client-server API base URL (also written into matterbridge configurations). */
  readonly url: string;
  /** The part after `:` in its user ids. */
  readonly serverName: string;
  /** Creates a (non-admin) account; CONFLICT when the name is taken. */
  register(username: string, password: string): Promise<MatrixAccount>;
  /** Whether the homeserver accepts this password for the user. */
  checkPassword(username: string, password: string): Promise<boolean>;
  /** Creates a private room owned by the token's user; answers its room id. */
  createRoom(accessToken: string, name: string): Promise<string>;
}

/** The configured homeserver, or null when MATRIX_HOMESERVER_URL is unset. */
export function createHomeserver(config: Config): Homeserver | null {
  if (!config.matrixHomeserverUrl) return null;
  return new MatrixHomeserver({
    url: config.matrixHomeserverUrl,
    serverName: config.matrixServerName!,
    registrationSharedSecret: config.matrixRegistrationSharedSecret!,
  });
}
