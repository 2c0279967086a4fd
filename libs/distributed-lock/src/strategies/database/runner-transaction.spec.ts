import type { Mock } from 'vitest';
import { QueryFailedError, type QueryRunner } from 'typeorm';
import { beginLockTransaction, commitLockTransaction } from './runner-transaction';

// The guards that decide between the statement sent straight and TypeORM's own methods. What the
// direct path does to a real MariaDB transaction is checked in test/integration/database.int.spec.ts.

interface FakeRunner {
  connection: { options: Record<string, unknown>; subscribers: unknown[] };
  databaseConnection: { query: Mock };
  isTransactionActive: boolean;
  isReleased: boolean;
  transactionDepth?: number;
  startTransaction: Mock;
  commitTransaction: Mock;
}

function fakeRunner(failWith?: Error): FakeRunner {
  return {
    connection: { options: { type: 'mysql' }, subscribers: [] },
    databaseConnection: { query: vi.fn((_sql: string, _values: unknown[], callback: (error: Error | null, result: unknown) => void) => callback(failWith ?? null, {})) },
    isTransactionActive: false,
    isReleased: false,
    transactionDepth: 0,
    startTransaction: vi.fn(() => Promise.resolve()),
    commitTransaction: vi.fn(() => Promise.resolve()),
  };
}

const asRunner = (fake: FakeRunner): QueryRunner => fake as unknown as QueryRunner;
const sent = (fake: FakeRunner): string[] => fake.databaseConnection.query.mock.calls.map(([sql]) => sql as string);

describe('beginLockTransaction / commitLockTransaction', () => {
  it('sends START TRANSACTION and COMMIT straight when nothing observes, leaving TypeORM\'s bookkeeping as its methods do', async () => {
    const runner = fakeRunner();
    await beginLockTransaction(asRunner(runner), true);
    expect(runner).toMatchObject({ isTransactionActive: true, transactionDepth: 1 });
    await commitLockTransaction(asRunner(runner), true);
    expect(runner).toMatchObject({ isTransactionActive: false, transactionDepth: 0 });
    expect(sent(runner)).toEqual(['START TRANSACTION', 'COMMIT']);
    expect(runner.startTransaction).not.toHaveBeenCalled();
    expect(runner.commitTransaction).not.toHaveBeenCalled();
  });

  it.each<[string, (runner: FakeRunner) => void]>([
    ['query logging', (runner) => (runner.connection.options.logging = ['query'])],
    ['a slow-query threshold', (runner) => (runner.connection.options.maxQueryExecutionTime = 100)],
    ['an isolation level of the data source', (runner) => (runner.connection.options.isolationLevel = 'SERIALIZABLE')],
    ['subscribers, which hear transaction events', (runner) => runner.connection.subscribers.push({ beforeTransactionStart: () => undefined })],
    ['a runner that keeps no numeric depth (another TypeORM)', (runner) => delete runner.transactionDepth],
    ['fastPaths: false (the public API only)', () => undefined],
  ])('leaves the transaction to TypeORM with %s', async (what, arrange) => {
    const fastPaths = !what.startsWith('fastPaths: false');
    const runner = fakeRunner();
    arrange(runner);
    await beginLockTransaction(asRunner(runner), fastPaths);
    await commitLockTransaction(asRunner(runner), fastPaths);
    expect(runner.startTransaction).toHaveBeenCalledTimes(1);
    expect(runner.commitTransaction).toHaveBeenCalledTimes(1);
    expect(sent(runner)).toEqual([]);
  });

  it('leaves a savepoint the caller left open (depth above 1) to TypeORM\'s commit', async () => {
    const runner = fakeRunner();
    await beginLockTransaction(asRunner(runner), true);
    runner.transactionDepth = 2;
    await commitLockTransaction(asRunner(runner), true);
    expect(runner.commitTransaction).toHaveBeenCalledTimes(1);
    expect(sent(runner)).toEqual(['START TRANSACTION']);
  });

  it('fails with TypeORM\'s QueryFailedError and leaves the runner untouched when the statement fails', async () => {
    const runner = fakeRunner(new Error('Connection lost: The server closed the connection.'));
    const error = await beginLockTransaction(asRunner(runner), true).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueryFailedError);
    expect((error as Error).message).toMatch(/Connection lost/);
    expect(runner).toMatchObject({ isTransactionActive: false, transactionDepth: 0 });
  });
});
