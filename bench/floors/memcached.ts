import { randomUUID } from 'node:crypto';
import { MemcacheClient } from 'memcache-client';
import { memcachedLockKey } from '@app/distributed-lock/strategies/memcached/memcached-keys';
import { memcachedExpiry } from '@app/distributed-lock/strategies/memcached/memcached-expiry';
import { addOwner, deleteIfOwner } from '@app/distributed-lock/strategies/memcached/memcached-lock.commands';
import type { BenchLock } from '../bench-subject';
import { env } from '../bench-env';

/** The floor as the issue sets it: `add` (the lock) and `delete` (the release, not owner-checked). */
export const MEMCACHED_FLOOR = 'floor:memcached add + delete';

/** The strategy's own commands, raw: `add`, then `gets` + `cas` to an expired item (the owner-checked release). */
export const MEMCACHED_COMMANDS_FLOOR = "floor:memcached the strategy's commands (add + gets + cas)";

const yieldLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A memcache-client on the benchmark's server, set up as the strategy sets up the clients it creates. */
function benchClient(): MemcacheClient {
  return new MemcacheClient({ server: env('LOCK_TEST_MEMCACHED'), cmdTimeout: 5_000, connectTimeout: 5_000, noDelay: true });
}

/** `add key owner` with a 30 s expiry to take; a busy lock is retried after yielding. */
async function addUntilStored(client: MemcacheClient, key: string, owner: string, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  const expiry = memcachedExpiry(30_000);
  while (!(await addOwner(client, key, owner, expiry))) {
    if (Date.now() > deadline) throw new Error('timeout');
    await yieldLoop();
  }
}

/**
 * The raw floor: `add` with the owner to take, a plain `delete` to release; waiting is a bare retry after
 * yielding to the event loop: no owner check, no queue, no watchdog, no validation.
 */
export function rawMemcachedFloor(): () => Promise<BenchLock> {
  return async () => {
    const client = benchClient();
    return {
      async acquire(key, waitMs) {
        const item = `bench-floor:${key}`;
        await addUntilStored(client, item, randomUUID(), waitMs);
        return async () => {
          await client.delete(item);
        };
      },
      close: async () => client.shutdown(),
    };
  };
}

/**
 * The memcached strategy's own commands, raw: its `add` to take (with the key encoded and the expiry it
 * sends), and its owner-checked release (`gets`, then a `cas` that stores the item already expired); a
 * busy lock is retried after yielding. Nothing of the lock service runs. Against `floor:memcached add +
 * delete` it shows what the owner check costs the server (one round trip more per release); the strategy
 * against it, what the library's code adds.
 */
export function rawMemcachedCommandsFloor(): () => Promise<BenchLock> {
  return async () => {
    const client = benchClient();
    return {
      async acquire(key, waitMs) {
        const item = memcachedLockKey('bench-raw:', key);
        const owner = randomUUID();
        await addUntilStored(client, item, owner, waitMs);
        return async () => {
          await deleteIfOwner(client, item, owner);
        };
      },
      close: async () => client.shutdown(),
    };
  };
}
