import { lua } from './redis-script';

// Redlock runs on several independent masters, each with a plain owner-checked key: no queue and no
// fencing counter (the masters could not agree on one), so each step is as cheap as SET NX PX.
// KEYS[1] lock STRING owner. ARGV[1] owner, ARGV[2] channel, ARGV[3] ttl.

/** Redlock, one master: take (or re-take, for the same owner) the key. Returns 1 when held. */
export const REDLOCK_ACQUIRE_SCRIPT = lua<[owner: string, channel: string, ttlMs: number], 0 | 1>(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[3]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
return 0
`);

/**
 * Redlock, one master: delete the key if it is this owner's, and announce the release. Returns 0 when it
 * was not this owner's, else 1 + the number of subscribers that heard the release (waiters' connections).
 */
export const REDLOCK_RELEASE_SCRIPT = lua<[owner: string, channel: string], number>(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1 + redis.call('PUBLISH', ARGV[2], 'r')
`);

/** Redlock, one master: extend the key if it is this owner's. */
export const REDLOCK_EXTEND_SCRIPT = lua<[owner: string, channel: string, ttlMs: number], 0 | 1>(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`);
