import type { DataSource, QueryRunner } from 'typeorm';

/** A statement a query runner sent, with when it was issued, when it left for the server, and when answered. */
export interface WatchedStatement {
  readonly sql: string;
  readonly issuedAt: number;
  /** Later than `issuedAt` by the hold. */
  sentAt: number | undefined;
  /** The server answered it: rows, or an error such as a cancel or a closed connection. */
  settledAt: number | undefined;
  /** The server's id of the connection it was sent on (MySQL's thread id, PostgreSQL's backend pid), when known. */
  readonly connectionId?: number;
}

/** The driver connection under a connected query runner: mysql2's and pg's both take `query(sql, …)`. */
interface DriverConnection {
  query: (...args: unknown[]) => unknown;
  threadId?: unknown;
  processID?: unknown;
}

function textOf(statement: unknown): string {
  if (typeof statement === 'string') return statement;
  const shaped = statement as { sql?: unknown; text?: unknown } | null;
  return String(shaped?.sql ?? shaped?.text ?? '');
}

/**
 * Records every statement matching `matches` that a query runner of `dataSource` sends on its own
 * connection, and holds each back on its way (`hold`: for that many ms, or until the promise it returns
 * settles), as a slow network would on that one connection (the server runs it, only later). `onIssued`
 * runs the moment the statement is issued, `onSettled` when it is answered. For a statement
 * that waits on the server (a row lock, GET_LOCK), a cancel sent from another connection meanwhile lands
 * before it: the race between an abort and the statement it must stop. The data source is the test's own:
 * its connections are watched until it is destroyed.
 */
export function watchStatements(
  dataSource: DataSource,
  options: {
    readonly matches: (sql: string) => boolean;
    readonly hold?: number | (() => Promise<unknown>);
    readonly onIssued?: (statement: WatchedStatement) => void;
    readonly onSettled?: (statement: WatchedStatement) => void;
  },
): WatchedStatement[] {
  const { matches, hold = 0, onIssued, onSettled } = options;
  const held = (): Promise<unknown> => (typeof hold === 'number' ? new Promise((resolve) => setTimeout(resolve, hold)) : hold());
  const seen: WatchedStatement[] = [];
  const watched = new WeakSet<object>();
  const watch = (connection: DriverConnection): void => {
    if (watched.has(connection)) return;
    watched.add(connection);
    const send = connection.query;
    connection.query = function watchedQuery(this: unknown, ...args: unknown[]): unknown {
      const sql = textOf(args[0]);
      if (!matches(sql)) return send.apply(this, args);
      const id = Number(connection.threadId ?? connection.processID);
      const statement: WatchedStatement = { sql, issuedAt: Date.now(), sentAt: undefined, settledAt: undefined, ...(Number.isInteger(id) ? { connectionId: id } : {}) };
      seen.push(statement);
      onIssued?.(statement);
      const sendNow = (): unknown => {
        statement.sentAt = Date.now();
        return send.apply(this, args);
      };
      const settle = (): void => {
        statement.settledAt = Date.now();
        onSettled?.(statement);
      };
      const callback = args.at(-1);
      if (typeof callback === 'function') {
        // mysql2: the answer comes to the callback.
        args[args.length - 1] = (...answer: unknown[]): unknown => {
          settle();
          return callback(...answer);
        };
        if (hold === 0) return sendNow();
        // mysql2's Query is not a promise (its then() throws): not returned from the callback.
        void held()
          .catch(() => undefined)
          .then(() => void sendNow());
        return undefined;
      }
      // pg: the answer is the promise query() returns.
      return held()
        .catch(() => undefined)
        .then(() => sendNow() as Promise<unknown>)
        .finally(settle);
    };
  };
  const createQueryRunner = dataSource.createQueryRunner.bind(dataSource);
  dataSource.createQueryRunner = (...args: Parameters<DataSource['createQueryRunner']>): QueryRunner => {
    const runner = createQueryRunner(...args);
    const connect = runner.connect.bind(runner);
    runner.connect = async (): Promise<unknown> => {
      const connection = (await connect()) as unknown;
      watch((runner as unknown as { databaseConnection: DriverConnection }).databaseConnection);
      return connection;
    };
    return runner;
  };
  return seen;
}
