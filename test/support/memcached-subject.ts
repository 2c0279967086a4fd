import { MemcachedLockStrategy } from '@app/distributed-lock/strategies/memcached';
import { memcachedLockKey } from '@app/distributed-lock/strategies/memcached/memcached-keys';
import { MemcacheClient } from 'memcache-client';
import type { ContractSubject } from '../contract/contract-subject';

/** The memcached server the tests use ("host:port"), from `LOCK_TEST_MEMCACHED` (set by the global setup). */
export function memcachedServer(variable = 'LOCK_TEST_MEMCACHED'): string {
  const value = process.env[variable];
  if (!value) throw new Error(`${variable} is not set: run the tests through \`npm test\` (which starts the servers) or point it at your memcached`);
  return value;
}

/** A plain memcache-client of its own, as an operator's console or another application would use. */
export function rawMemcached(server = memcachedServer()): MemcacheClient {
  return new MemcacheClient({ server, cmdTimeout: 5_000, connectTimeout: 5_000, noDelay: true });
}

/** Deletes a lock's item with a throwaway client, as an operator (or an eviction) would. */
export async function deleteMemcachedLock(key: string, server = memcachedServer(), namespace = 'dlock:'): Promise<void> {
  const raw = rawMemcached(server);
  try {
    await raw.delete(memcachedLockKey(namespace, key)).catch((error: unknown) => {
      // Already gone (expired, released) is what the caller wanted.
      if (!String((error as Error).message).startsWith('NOT_FOUND')) throw error;
    });
  } finally {
    raw.shutdown();
  }
}

/** The contract suite's memcached subject: one server from the global setup, polled, no fencing. */
export function memcachedSubject(): ContractSubject {
  return {
    name: 'memcached',
    capabilities: { fencing: false, fifo: false, sharedLocks: false, crossProcess: true },
    create: async () => new MemcachedLockStrategy({ connection: memcachedServer() }),
    removeBehindBack: (_strategy, key) => deleteMemcachedLock(key),
  };
}
