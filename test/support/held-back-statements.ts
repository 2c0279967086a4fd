import type { DataSource, QueryRunner } from 'typeorm';

/** A statement held back on its way to the server, and what became of it once sent. */
export interface HeldBackStatement {
  readonly sql: string;
  /** The server answered it (rows, or an error such as a cancel or a closed connection). */
  settled: boolean;
}

/** The driver connection under a connected query runner: mysql2's and pg's both take `query(sql, …)`. */
interface DriverConnection {
  query: (...args: unknown[]) => unknown;
}

function textOf(statement: unknown): string {
  if (typeof statement === 'string') return statement;
  const shaped = statement as { sql?: unknown; text?: unknown } | null;
  return String(shaped?.sql ?? shaped?.text ?? '');
}

/**
 * Holds back, for `holdMs`, every statement matching `matches` that a query runner of `dataSource` sends on
 * its own connection, as a slow network would on that one connection; `onHeld` runs at the moment the
 * statement would have left. The server runs every statement, only later. For a statement that waits on
 * the server (a row lock, GET_LOCK), a cancel sent from another connection meanwhile lands before it: the
 * race between an abort and the statement it must stop. The data source is the test's own: its
 * connections keep the hold until it is destroyed.
 */
export function holdBackStatements(dataSource: DataSource, matches: (sql: string) => boolean, holdMs: number, onHeld: (statement: HeldBackStatement) => void): HeldBackStatement[] {
  const held: HeldBackStatement[] = [];
  const patched = new WeakSet<object>();
  const hold = (connection: DriverConnection): void => {
    if (patched.has(connection)) return;
    patched.add(connection);
    const send = connection.query;
    connection.query = function heldBack(this: unknown, ...args: unknown[]): unknown {
      const sql = textOf(args[0]);
      if (!matches(sql)) return send.apply(this, args);
      const statement: HeldBackStatement = { sql, settled: false };
      const settle = (): void => {
        statement.settled = true;
      };
      held.push(statement);
      onHeld(statement);
      const callback = args.at(-1);
      if (typeof callback === 'function') {
        // mysql2: the answer comes to the callback.
        args[args.length - 1] = (...answer: unknown[]): unknown => {
          settle();
          return callback(...answer);
        };
        setTimeout(() => send.apply(this, args), holdMs);
        return undefined;
      }
      // pg: the answer is the promise query() returns.
      return new Promise((resolve) => setTimeout(resolve, holdMs)).then(() => send.apply(this, args) as Promise<unknown>).finally(settle);
    };
  };
  const createQueryRunner = dataSource.createQueryRunner.bind(dataSource);
  dataSource.createQueryRunner = (...args: Parameters<DataSource['createQueryRunner']>): QueryRunner => {
    const runner = createQueryRunner(...args);
    const connect = runner.connect.bind(runner);
    runner.connect = async (): Promise<unknown> => {
      const connection = (await connect()) as unknown;
      hold((runner as unknown as { databaseConnection: DriverConnection }).databaseConnection);
      return connection;
    };
    return runner;
  };
  return held;
}
