import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { LockCommitFailedError } from '../errors/lock-commit-failed.error';
import { LockPermissionDeniedError } from '../errors/lock-permission-denied.error';
import { LockNotHeldError } from '../errors/lock-not-held.error';
import { runBounded } from './bounded-operation';

describe('runBounded', () => {
  it('turns a silent backend into a typed error after the bound, and hands back a late result', async () => {
    let late: string | undefined;
    let answer: (value: string) => void = () => undefined;
    const pending = runBounded({
      strategy: 'test',
      operation: 'acquire',
      key: 'k',
      timeoutMs: 30,
      run: () => new Promise<string>((resolve) => (answer = resolve)),
      onLateResult: (value) => (late = value),
    });
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBackendUnavailableError);
    expect((error as LockBackendUnavailableError).operation).toBe('acquire');
    expect((error as LockBackendUnavailableError).key).toBe('k');
    answer('grant');
    await new Promise((resolve) => setImmediate(resolve));
    expect(late).toBe('grant');
  });

  it('wraps driver errors with their cause and passes the library’s own errors through', async () => {
    const driverError = new Error('ECONNREFUSED');
    const wrapped = await runBounded({ strategy: 's', operation: 'release', timeoutMs: 1000, run: () => Promise.reject(driverError) }).catch((e: unknown) => e);
    expect(wrapped).toBeInstanceOf(LockBackendUnavailableError);
    expect((wrapped as Error).cause).toBe(driverError);
    expect((wrapped as Error).message).toContain('ECONNREFUSED');
    const own = new LockNotHeldError('k', 's');
    await expect(runBounded({ strategy: 's', operation: 'extend', timeoutMs: 1000, run: () => Promise.reject(own) })).rejects.toBe(own);
  });

  it('catches a synchronous throw from the strategy', async () => {
    await expect(
      runBounded({
        strategy: 's',
        operation: 'acquire',
        timeoutMs: 1000,
        run: () => {
          throw new Error('sync');
        },
      }),
    ).rejects.toBeInstanceOf(LockBackendUnavailableError);
  });

  it('keeps what to do of a shortage in this process (maxHeldConnections) when it names the error anew', async () => {
    const hint = 'All 8 connections allowed to hold pessimistic locks in this process stayed in use for the whole wait: raise maxHeldConnections.';
    const renamed = await runBounded({
      strategy: 'orders',
      operation: 'acquire',
      timeoutMs: 1_000,
      run: () => Promise.reject(new LockBackendUnavailableError('pessimistic', 'acquire', 1_500, { key: 'k', hint })),
    }).catch((e: unknown) => e);
    expect(renamed).toMatchObject({ strategy: 'orders', hint });
    expect(String(renamed)).toContain('maxHeldConnections');
    expect(String(renamed)).not.toContain('Check that the server is up');
  });

  it("names the strategy's own errors by the name it was registered under", async () => {
    const driverError = new Error('ECONNREFUSED');
    const unavailable = await runBounded({
      strategy: 'orders',
      operation: 'acquire',
      timeoutMs: 1_000,
      run: () => Promise.reject(new LockBackendUnavailableError('database', 'acquire', 12, { key: 'k', cause: driverError })),
    }).catch((e: unknown) => e);
    expect(unavailable).toBeInstanceOf(LockBackendUnavailableError);
    expect(unavailable).toMatchObject({ strategy: 'orders', operation: 'acquire', elapsedMs: 12, key: 'k', cause: driverError });
    expect(String(unavailable)).toContain('"orders"');
    expect(String(unavailable)).not.toContain('"database"');

    const commit = await runBounded({
      strategy: 'orders',
      operation: 'release',
      timeoutMs: 1_000,
      run: () => Promise.reject(new LockCommitFailedError('k', 'pessimistic', 'unknown', { cause: driverError })),
    }).catch((e: unknown) => e);
    expect(commit).toBeInstanceOf(LockCommitFailedError);
    expect(commit).toMatchObject({ strategy: 'orders', key: 'k', committed: 'unknown', cause: driverError });

    const refused = new Error('-102 not authenticated');
    const denied = await runBounded({
      strategy: 'orders',
      operation: 'acquire',
      timeoutMs: 1_000,
      run: () => Promise.reject(new LockPermissionDeniedError('zookeeper', 'acquire', 'cdrwa on /dlock', { key: 'k', cause: refused })),
    }).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(LockPermissionDeniedError);
    expect(denied).toMatchObject({ strategy: 'orders', operation: 'acquire', grant: 'cdrwa on /dlock', key: 'k', cause: refused });
  });
});
