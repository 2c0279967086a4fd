import { LOCK_PRELUDE } from './redis-lock.prelude';
import { lua } from './redis-script';

// Redlock runs on several independent masters, each with a plain owner-checked key: no fencing counter
// (the masters could not agree on one), so each step is as cheap as SET NX PX. The first master keeps the
// line of contenders with the single-Redis scripts instead (see RedlockQueueMaster).
// KEYS[1] lock STRING the holder's acquisition id (redlock-acquisition-id.ts). ARGV[1] that id ("owner"),
// ARGV[2] channel, ARGV[3] ttl.

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

/**
 * Redlock, one master: a local hand-over (see RedlockLocalHandOver) renames the key from this owner's
 * acquisition id to the successor's, for the successor's lease. Returns 1 when done, 0 when the key was not
 * this owner's.
 */
export const REDLOCK_HAND_OVER_SCRIPT = lua<[owner: string, successor: string, ttlMs: number], 0 | 1>(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`);

/**
 * The same on the master that keeps the line, whose vote is a single-Redis lock hash (see
 * RedlockQueueMaster): the successor becomes its writer, with one hold and its grant time ('g', with the
 * hash's token: see redis-lock.scripts.ts), the line left as it is. Returns 1 when done, 0 when the lock was
 * not this owner's.
 */
export const REDLOCK_LINE_HAND_OVER_SCRIPT = lua<[owner: string, successor: string, ttlMs: number], 0 | 1>(`
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return 0 end
local now = redis.call('TIME')
local granted = string.format('%s:%s%03d', redis.call('HGET', KEYS[1], 't') or '0', now[1], math.floor(tonumber(now[2]) / 1000))
-- The expiry first: a ttl it refuses then fails the script before anything was written.
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('HSET', KEYS[1], 'o', ARGV[2], 'c', 1, 'g', granted)
return 1
`);

/**
 * What one master says of a key for `LockService.query`: its record's layout ('s' a plain key, 'h' the
 * hash of a master that keeps the line, '' none), the acquisition id it names ('' none), its PTTL, and the
 * live waiters of its line in order as [id, mode] pairs, flattened.
 */
export type RedlockInspectReply = [layout: 's' | 'h' | '', id: string, pttl: number, waiters: string[]];

/**
 * Redlock, one master, read only: see RedlockInspectReply. KEYS: lock, queue, waiters (the line's, as
 * RedlockQueueMaster names them). ARGV: the most waiters to list (0 on masters that keep no line for us).
 * Either layout may be on any master (an instance that lists the masters in another order keeps its line
 * elsewhere), so the type is found out rather than assumed; waiters that stopped renewing their place are
 * left out, as a hand-over skips them.
 */
export const REDLOCK_INSPECT_SCRIPT = lua<[limit: number], RedlockInspectReply>(`${LOCK_PRELUDE}
local layout, id = 's', redis.pcall('GET', KEYS[1])
if type(id) == 'table' then
  -- WRONGTYPE: the hash of a line's master.
  layout, id = 'h', redis.call('HGET', KEYS[1], 'o')
elseif not id then
  layout = ''
end
local limit = tonumber(ARGV[1])
local waiters = limit > 0 and live_waiters(limit, now_ms()) or {}
return {layout, id or '', id and redis.call('PTTL', KEYS[1]) or -2, waiters}
`);
