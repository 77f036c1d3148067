import { Connection, Pool, type Client, type PoolClient } from 'pg';

/** The error a query gets when the server did not answer within the bound. */
export class QueryTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(ms: number) {
    super(`the database did not answer within ${ms} ms`);
    this.name = 'QueryTimeoutError';
  }
}

/**
 * Connection settings that bound the time a connection may take to open and a statement may run
 * on the server (`statement_timeout` ends a slow query on a live server, leaving the connection
 * usable). 0 means no bound; `statementsToo` false bounds only the opening.
 */
export function boundedConnection(timeoutMs: number, applicationName: string, statementsToo = true) {
  return {
    application_name: applicationName,
    keepAlive: true,
    ...(timeoutMs > 0 ? { connectionTimeoutMillis: timeoutMs } : {}),
    ...(timeoutMs > 0 && statementsToo ? { statement_timeout: timeoutMs } : {}),
  };
}

type Queryable = Pick<Client, 'query' | 'once'> & {
  connection: { on(event: 'readyForQuery', cb: () => void): unknown; stream: { destroy(err?: Error): void } };
};

/**
 * Bounds every query of a connected client on the client side. A server that is frozen, or cut
 * off without a word, cannot end a statement itself; past `timeoutMs` without an answer the
 * connection is destroyed: its queries fail with QueryTimeoutError and the client ends, so
 * whichever pool holds it (knex, pg.Pool) discards it instead of handing it out again.
 * The server answers each query with one ReadyForQuery; the timer runs while any is owed.
 */
export function boundQueries<C extends Client | PoolClient>(client: C, timeoutMs: number): C {
  if (timeoutMs <= 0) return client;
  const c = client as unknown as Queryable;
  let owed = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => c.connection.stream.destroy(new QueryTimeoutError(timeoutMs)), timeoutMs);
    timer.unref();
  };
  const query = c.query;
  c.query = function (this: unknown, ...args: unknown[]) {
    if (owed++ === 0) arm();
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as Queryable['query'];
  c.connection.on('readyForQuery', () => {
    owed = Math.max(0, owed - 1);
    if (owed > 0) arm();
    else clearTimeout(timer);
  });
  c.once('end', () => clearTimeout(timer));
  return client;
}

/** A pg.Pool whose connections are bounded as above (graphile-worker's queue runs on it). */
export function boundedPool(opts: {
  connectionString: string;
  max: number;
  timeoutMs: number;
  applicationName: string;
}): Pool {
  const pool = new Pool({
    connectionString: opts.connectionString,
    max: opts.max,
    idleTimeoutMillis: 10_000,
    ...boundedConnection(opts.timeoutMs, opts.applicationName),
  });
  pool.on('connect', (client) => {
    boundQueries(client, opts.timeoutMs);
    // A connection that dies while checked out but between queries (the server stopping says
    // 57P01, "terminating connection due to administrator command") emits 'error' on its client,
    // which its holder may not listen to (graphile-worker stops listening once released):
    // unheard, that would end the process. Its next query fails on its own.
    client.on('error', () => undefined);
  });
  // An idle connection that dies (the server restarted or went away) is dropped by the pool, which
  // then emits 'error': unheard, that would end the process. The next query fails on its own.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * Ends the statement running on `client` if it still runs after `timeoutMs` (a per-request-class
 * bound under the connection's own `statement_timeout`), without a statement of its own: past it,
 * a cancel request goes on a connection of its own and the statement fails with `57014`.
 * `done()` stops the timer and says whether it fired; a connection it fired on must not be
 * reused (the cancel may land on its next statement), so it is ended.
 */
export function cancelAfter(client: Client, timeoutMs: number): { done(): boolean } {
  if (timeoutMs <= 0) return { done: () => false };
  let fired = false;
  let finished = false;
  const timer = setTimeout(() => {
    fired = true;
    // The protocol's CancelRequest, as pg's Client.cancel sends it.
    const { host, port, processID, secretKey } = client as unknown as Record<string, never>;
    // Not in @types/pg, but pg's own Client.cancel does exactly this.
    const con = new Connection() as Connection & {
      connect(port: number | string, host?: string): void;
      cancel(processID: number, secretKey: number): void;
    };
    // Unreachable, the statement ends at the connection's own bound instead.
    con.on('error', () => undefined);
    con.on('connect', () => {
      con.cancel(processID, secretKey);
    });
    con.connect((host as string).startsWith('/') ? `${host}/.s.PGSQL.${port}` : port, host);
  }, timeoutMs);
  timer.unref();
  return {
    done() {
      clearTimeout(timer);
      if (fired && !finished) {
        // knex drops a connection it finds disposed instead of handing it out again.
        (client as Client & { __knex__disposed?: string }).__knex__disposed = 'statement canceled';
        client.end().catch(() => undefined);
      }
      finished = true;
      return fired;
    },
  };
}
