export { MemcachedLockStrategy, type MemcachedLockStrategyOptions } from './memcached-lock.strategy';
export { MAX_MEMCACHED_KEY_BYTES } from './memcached-keys';
export { MAX_MEMCACHED_LEASE_MS } from './memcached-expiry';
export type { MemcachedLockClient } from './memcached-client.type';
