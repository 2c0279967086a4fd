import type { MemcacheClient } from 'memcache-client';

/**
 * The commands the memcached strategy sends, from `memcache-client` (text protocol): `add` to take a lock,
 * `gets` to read its owner with the CAS value, `cas` to extend, hand over or release it owner-checked,
 * `version` for health checks, and `shutdown` for a client the strategy created.
 */
export type MemcachedLockClient = Pick<MemcacheClient, 'add' | 'gets' | 'cas' | 'version' | 'shutdown'>;
