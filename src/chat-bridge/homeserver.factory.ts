import type { Config } from '../config';
import type { Homeserver } from './homeserver.port';
import { MatrixHomeserver } from './matrix.homeserver';

/** The configured homeserver, or null when MATRIX_HOMESERVER_URL is unset. */
export function createHomeserver(config: Config): Homeserver | null {
  if (!config.matrixHomeserverUrl) return null;
  return new MatrixHomeserver({
    url: config.matrixHomeserverUrl,
    serverName: config.matrixServerName!,
    registrationSharedSecret: config.matrixRegistrationSharedSecret!,
  });
}
