import { LockBackendUnavailableError } from '../errors/lock-backend-unavailable.error';
import { LockManager } from './lock-manager';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';

/** A strategy whose close never settles (a server that stopped answering its goodbye). */
class NeverCloses extends InMemoryLockStrategy {
  giveUp: AbortSignal | undefined;
  override close(giveUp?: AbortSignal): Promise<void> {
    this.giveUp = giveUp;
    return new Promise<void>(() => undefined);
  }
}

/** A strategy whose close fails with a plain error of its driver. */
class FailsToClose extends InMemoryLockStrategy {
  override close(): Promise<void> {
    return Promise.reject(new Error('socket hang up'));
  }
}

describe('LockManager.close with a strategy close that does not end well', () => {
  // Found by an adversarial pass (stop 67): the close's own error was wrapped in a second one, whose message
  // read "could not close (1 failure(s)) within 0 ms: … could not close within 5001 ms. Check …. Check …".
  it('past its bound: one LockBackendUnavailableError that names the close and the bound, and the strategy told to give up', async () => {
    const strategy = new NeverCloses();
    const error = await new LockManager(strategy, { operationTimeout: 100 }).close().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LockBackendUnavailableError);
    expect((error as LockBackendUnavailableError).operation).toBe('close');
    expect((error as Error).message).toMatch(/^Strategy "memory" could not close within 1\d\d ms\. Check that the server is up/);
    expect((error as Error).message.match(/could not close/g)).toHaveLength(1);
    expect(strategy.giveUp?.aborted).toBe(true);
  });

  it('failed: one LockBackendUnavailableError with the driver\'s error as its cause', async () => {
    const error = await new LockManager(new FailsToClose()).close().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LockBackendUnavailableError);
    expect((error as Error).message.match(/could not close/g)).toHaveLength(1);
    expect((error as Error).message).toContain('socket hang up');
    expect(((error as Error).cause as Error).message).toBe('socket hang up');
  });
});
