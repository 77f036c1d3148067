export interface MatrixAccount {
  userId: string;
  accessToken: string;
}

export interface MatrixRoom {
  roomId: string;
  alias: string;
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
  /** Creates a private room of the token's user under the alias `#<aliasLocalpart>:<server name>`. */
  createRoom(accessToken: string, room: { name: string; aliasLocalpart: string }): Promise<MatrixRoom>;
  /** Removes an alias the token's user created (the room itself stays). */
  deleteAlias(accessToken: string, alias: string): Promise<void>;
}
