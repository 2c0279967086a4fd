// Lua scripts of the Redis strategies. Each lock operation is one script, so it is atomic on the server:
// never SETNX followed by EXPIRE, never GET followed by DEL. Every key a script touches is passed in
// KEYS (one hash slot thanks to the hash tag); every value in ARGV.
//
// Keys of one lock:  KEYS[1] lock    HASH  o = writer, c = its hold count (1; more only from versions that re-entered on the server), t = its fencing token, g = "<t>:<ms>",
//                                           the server time it was granted, with the token of that grant;
//                                           r:<owner> = a reader's fencing token
//                    KEYS[2] queue   ZSET  waiting owners, scored by arrival number (FIFO)
//                    KEYS[3] waiters HASH  owner -> "<ttlMs>:<aliveUntilMs>:<x|s>:<claimMs>:<inbox>" (fair) or
//                                          "<ttlMs>:<aliveUntilMs>:<x|s>:<claimMs>:<joinedMs>:<inbox>" (barging), plus
//                                          "#seq", the arrival counter; <inbox> is the waiter's client channel (may be
//                                          empty), <joinedMs> the server time it joined the queue. Barging mode also
//                                          keeps "#head", the server time (ms) the head of the queue last changed,
//                                          and "#woke", the head a release woke (see RELEASE_SCRIPT)
//                    KEYS[4] fence   STRING the last fencing token ("" or KEYS[1] for none: tokens are then 0)
//                    KEYS[5] readers ZSET  reader owners, scored by the server time their lease ends
// ARGV[1] is always the owner id; ARGV[2] the channel on which releases and hand-overs are announced.

import { LOCK_PRELUDE } from './redis-lock.prelude';
import { lua } from './redis-script';
import { SCRIPT_BASICS } from './redis-script-basics';

/** Acquire's arguments: owner, channel, ttlMs, bargeMs, waiter, aliveMs, mode, inbox (see ACQUIRE_SCRIPT). */
export type AcquireArgs = [owner: string, channel: string, ttlMs: number, bargeMs: number, waiter: '0' | '1', aliveMs: number, mode: 'x' | 's', inbox: string];

/**
 * Release's and leave's arguments: owner, channel, announce ("0": publish nothing on the lock's channel, where
 * nobody listens; absent or "1": announce a lock left free there, for Redlock's lines), bargeMs (0 or absent:
 * strict hand-over).
 */
export type ReleaseArgs = [owner: string, channel: string, announce?: '0' | '1', bargeMs?: number, whole?: '0' | '1'];

/**
 * Acquire's reply: held (1) with the token; or not (0), with a waiter's view of the newest token issued and
 * the server's clock in µs (both "0"-less strings), or 0 for a plain try.
 */
export type AcquireReply = [held: 0 | 1, token: number | string, serverUs?: string];

/** Leaving a queue: 1 with the token of a grant that came at the last moment (the caller must give it back), else 0. */
export type LeaveReply = [handed: 0 | 1, token?: number | string];

/**
 * Acquire. ARGV: owner, channel, ttlMs, bargeMs (0: strict FIFO; more: the barging window, see below), waiter
 * ("1": enqueue or refresh this owner's place; "0": plain try), aliveMs (how long a queued waiter stays in line
 * without refreshing), mode ("x"/"s"), inbox (the channel on which this waiter hears that the lock was handed to
 * it, or woken; "" for the lock's channel). Returns {1, token} when held (a hand-over to this waiter counts),
 * {0, 0} when not; a waiter's {0, writer's token or 0, server time in µs}.
 *
 * Barging (bargeMs > 0, writers only), as Go's sync.Mutex: a writer that finds the lock free while others
 * are queued takes it as long as the queue's live head has been head for less than bargeMs (see live_head);
 * a queued one leaves the queue. Past the window the free lock goes to the head (hand_over), strictly.
 * Readers, and writers behind a queued reader, are served in order as in fair mode.
 */
export const ACQUIRE_SCRIPT = lua<AcquireArgs, AcquireReply>(`${LOCK_PRELUDE}
local owner, channel, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local barge, waiter, alive, mode, inbox = tonumber(ARGV[4]), ARGV[5] == '1', tonumber(ARGV[6]), ARGV[7], ARGV[8] or ''
if not whole_ms(ttl) or not whole_ms(alive) then return redis.error_reply('ERR ttl and alive must be whole milliseconds') end
if mode ~= 'x' and mode ~= 's' then return redis.error_reply('ERR mode must be x or s') end
if barge ~= 0 and not whole_ms(barge) then return redis.error_reply('ERR bargeMs must be 0 or whole milliseconds') end
local barging = barge > 0
-- Nothing held, nobody in line and no reader entries (not even stale ones): the lock is free, at the cost
-- of one command instead of three (holder, queue head, readers), the common case of an uncontended lock.
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[5]) == 0 then return {1, grant(owner, ttl, mode)} end
local writer = redis.call('HGET', KEYS[1], 'o')
if mode == 'x' and writer == owner then
  -- Already ours: a waiter checking on a hand-over it may have missed, or the same request sent again (a
  -- client resends a call whose reply a cut connection lost). Owner ids are one per acquisition, and
  -- re-entry is the caller's (in its process), so it adds no hold: one release still frees it.
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1, redis.call('HGET', KEYS[1], 't')}
end
if mode == 's' and live_readers() > 0 and redis.call('ZSCORE', KEYS[5], owner) then
  -- A reader that finds a hand-over it missed: its lease becomes the one it asked for, as a writer's does
  -- above (the hand-over only reserved it for the claim).
  redis.call('ZADD', KEYS[5], 'XX', now_ms() + ttl, owner)
  keep_for(KEYS[5], ttl)
  keep_for(KEYS[1], ttl)
  return {1, redis.call('HGET', KEYS[1], 'r:' .. owner)}
end
local queued = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
local free = grantable(mode, writer)
if free and queued and queued ~= owner and barging and mode == 'x' then
  local head, w, since = live_head()
  if head and head ~= owner and w.mode == 'x' and now_ms() - since < barge then
    -- Barge: the head is within its window. Our own place in line, if any, is given up (the head stays).
    if waiter and redis.call('ZREM', KEYS[2], owner) == 1 then redis.call('HDEL', KEYS[3], owner) end
    return {1, grant(owner, ttl, mode)}
  end
  queued = head
end
if free and queued and queued ~= owner then
  -- Others are in line (a release that found nobody alive, a lost race, a barging window that passed):
  -- serve them first.
  hand_over(channel, not writer, barging)
  local token = held_token(owner)
  if token then return {1, token} end
  queued = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  free = grantable(mode)
end
if free and (not queued or queued == owner) then
  -- Our place in line, if we had one, was at its head (queued): an empty queue holds nothing of ours.
  if waiter and queued == owner then
    redis.call('ZREM', KEYS[2], owner)
    redis.call('HDEL', KEYS[3], owner)
    if barging then mark_head() end
  end
  return {1, grant(owner, ttl, mode)}
end
if waiter then
  local joined = now_ms()
  if not redis.call('ZSCORE', KEYS[2], owner) then
    redis.call('ZADD', KEYS[2], redis.call('HINCRBY', KEYS[3], '#seq', 1), owner)
  elseif barging then
    local w = parse_waiter(redis.call('HGET', KEYS[3], owner), '')
    if w and w.joined > 0 then joined = w.joined end
  end
  -- Only barging reads a join time: a fair waiter's entry keeps the five fields that instances of earlier
  -- versions parse, so that a rolling upgrade of a fair lock delivers every hand-over to the right inbox.
  if barging then
    redis.call('HSET', KEYS[3], owner, string.format('%d:%d:%s:%d:%d:%s', ttl, now_ms() + alive, mode, alive, joined, inbox))
  else
    redis.call('HSET', KEYS[3], owner, string.format('%d:%d:%s:%d:%s', ttl, now_ms() + alive, mode, alive, inbox))
  end
  redis.call('PEXPIRE', KEYS[2], alive * 4 + ttl)
  redis.call('PEXPIRE', KEYS[3], alive * 4 + ttl)
  -- The writer's token (the newest issued while a writer holds) and the clock (µs), by which the waiter
  -- tells a hand-over that came before this check (which found it gone: its claim ran out) from a later one.
  return {0, redis.call('HGET', KEYS[1], 't') or '0', string.format('%.0f', now_us())}
end
return {0, 0}
`);

/**
 * Release. ARGV: see ReleaseArgs. A writer drops one hold (the last frees the lock; with whole = "1", all of
 * them at once: a lock broken by an operator); a reader leaves. A freed
 * lock goes to the first live waiters (or, with announce, is announced free on the lock's channel when nobody
 * waits). Barging mode (bargeMs > 0), the head a writer within its window (see live_head): the lock is left
 * free, for whoever comes first, and the head is woken on its inbox ("w <owner>") so that it tries at once.
 * A head is woken once ("#woke" names it until the head changes): a head that found the lock taken again
 * checks once more when its window has passed (see waitInRedisQueue), and past the window a release hands
 * it the lock. Waking it at every release of a burst cost, measured, one futile script and one message per
 * section. Returns 1 when the lock was this owner's, 0 when it was not.
 */
export const RELEASE_SCRIPT = lua<ReleaseArgs, 0 | 1>(`${LOCK_PRELUDE}
local owner, channel, announce, barge = ARGV[1], ARGV[2], ARGV[3] ~= '0', tonumber(ARGV[4] or '0') or 0
local holder = redis.call('HMGET', KEYS[1], 'o', 'c')
if holder[1] == owner then
  if (tonumber(holder[2]) or 1) > 1 and ARGV[5] ~= '1' then
    redis.call('HINCRBY', KEYS[1], 'c', -1)
    return 1
  end
  redis.call('HDEL', KEYS[1], 'o', 'c', 't', 'g')
elseif redis.call('ZREM', KEYS[5], owner) == 1 then
  redis.call('HDEL', KEYS[1], 'r:' .. owner)
else
  return 0
end
if barge > 0 then
  local head, w, since, woke = live_head()
  if not head then return 1 end
  -- Only a barging head (its entry has a join time) is woken to try: a fair one (an instance with fair mode
  -- on the same key, or of an earlier version) re-checks only at its recheckInterval after a wake that
  -- found the lock barged, so it is handed the lock, as fair mode promises.
  if w.mode == 'x' and w.inbox ~= '' and w.joined > 0 and now_ms() - since < barge then
    -- Readers still holding: nobody can take it yet; the last of them wakes the head.
    if not grantable('x', false) then return 1 end
    if woke ~= head then
      redis.call('HSET', KEYS[3], '#woke', head)
      redis.call('PUBLISH', w.inbox, 'w ' .. head)
    end
    return 1
  end
end
-- No writer holds now: the one that left was the writer, or a reader (never beside a writer).
if not hand_over(channel, true, barge > 0) and announce then redis.call('PUBLISH', channel, 'r') end
return 1
`);

/** Extend. ARGV: owner, channel (unused), ttlMs. Returns 1 when extended, 0 when the lock is not this owner's. */
export const EXTEND_SCRIPT = lua<[owner: string, channel: string, ttlMs: number], 0 | 1>(`${LOCK_PRELUDE}
local owner, ttl = ARGV[1], tonumber(ARGV[3])
if not whole_ms(ttl) then return redis.error_reply('ERR ttl must be whole milliseconds') end
if redis.call('HGET', KEYS[1], 'o') == owner then
  redis.call('PEXPIRE', KEYS[1], ttl)
  return 1
end
if live_readers() > 0 and redis.call('ZSCORE', KEYS[5], owner) then
  redis.call('ZADD', KEYS[5], 'XX', now_ms() + ttl, owner)
  keep_for(KEYS[5], ttl)
  keep_for(KEYS[1], ttl)
  return 1
end
return 0
`);

/**
 * Held? ARGV: owner. Returns 1 when the owner holds the lock (as its writer, or as a reader whose lease has
 * not ended), 0 otherwise. Writes nothing: the check of every lease after a reconnection (RedisLeaseCheck).
 */
export const HELD_SCRIPT = lua<[owner: string], 0 | 1>(`${SCRIPT_BASICS}
if redis.call('HGET', KEYS[1], 'o') == ARGV[1] then return 1 end
local ends = redis.call('ZSCORE', KEYS[5], ARGV[1])
if ends and tonumber(ends) > now_ms() then return 1 end
return 0
`);

/**
 * Inspect's reply: the server's time (ms); the writer, its token and grant time ('' when none), its lease
 * left (PTTL); the live readers as [owner, lease end (server ms), token] triples, flattened; the live waiters
 * in queue order as [owner, mode] pairs, flattened.
 */
export type InspectReply = [now: number, writer: string, token: string, grantedAt: string, pttl: number, readers: string[], waiters: string[]];

/**
 * Inspect (LockService.query): who holds the lock and who waits, read only. ARGV: the most waiters to list.
 * Waiters whose liveness has lapsed (they stopped renewing their place: dead) are left out, as a hand-over
 * skips them.
 */
export const INSPECT_SCRIPT = lua<[limit: number], InspectReply>(`${LOCK_PRELUDE}
local now = now_ms()
local writer = redis.call('HMGET', KEYS[1], 'o', 't', 'g')
local readers = {}
local live = redis.call('ZRANGEBYSCORE', KEYS[5], '(' .. now, '+inf', 'WITHSCORES')
for i = 1, #live, 2 do
  readers[#readers + 1] = live[i]
  readers[#readers + 1] = live[i + 1]
  readers[#readers + 1] = redis.call('HGET', KEYS[1], 'r:' .. live[i]) or ''
end
-- The grant time only if it is this writer's: a writer granted by an older version of these scripts (a
-- rolling upgrade) stores none, and must not be given the time a previous writer left behind.
local granted = ''
if writer[1] and writer[3] then
  local sep = string.find(writer[3], ':', 1, true)
  if sep and string.sub(writer[3], 1, sep - 1) == writer[2] then granted = string.sub(writer[3], sep + 1) end
end
local waiters = live_waiters(tonumber(ARGV[1]), now)
return {now, writer[1] or '', writer[2] or '', granted, writer[1] and redis.call('PTTL', KEYS[1]) or -2, readers, waiters}
`);

/** Transfer's arguments: owner (the holder), successor (another contender of its process), ttlMs, boundMs. */
export type TransferArgs = [owner: string, successor: string, ttlMs: number, boundMs: number];

/** Transfer's reply: handed (1) with the successor's token; not held by the owner (0); declined (2), nothing changed. */
export type TransferReply = [outcome: 0 | 1 | 2, token?: number | string];

/**
 * Transfer (lock cohorting, barging mode): the writer `owner` hands its lock to `successor`, a contender of the
 * same process that waits in that process's line and not in the queue: a new holder with a new fencing token
 * and a lease of ttlMs, in one step, with no message to anyone. The queue is left as it is. Declined when a
 * waiter of another process has been the queue's live head for boundMs or more: the caller then releases, and
 * the lock goes to that head as a release gives it. Returns {1, token}, {0} when the lock is not this owner's
 * (its lease ended), {2} when declined.
 */
export const TRANSFER_SCRIPT = lua<TransferArgs, TransferReply>(`${LOCK_PRELUDE}
local owner, successor, ttl, bound = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
if not whole_ms(ttl) or not whole_ms(bound) then return redis.error_reply('ERR ttl and bound must be whole milliseconds') end
if redis.call('HGET', KEYS[1], 'o') ~= owner then return {0} end
if redis.call('EXISTS', KEYS[2]) == 1 then
  local head, _, since = live_head()
  if head and now_ms() - since >= bound then return {2} end
end
return {1, grant(successor, ttl, 'x')}
`);

/**
 * A waiter leaves the queue (timeout, abort). ARGV: see ReleaseArgs (announce: "0" publishes nothing on the
 * lock's channel). Returns {1, token} when the lock was handed to it meanwhile (the caller then owns it and
 * must release it), {0} otherwise.
 */
export const LEAVE_QUEUE_SCRIPT = lua<ReleaseArgs, LeaveReply>(`${LOCK_PRELUDE}
local owner, channel, announce, barge = ARGV[1], ARGV[2], ARGV[3] ~= '0', tonumber(ARGV[4] or '0') or 0
local was_head = barge > 0 and redis.call('ZRANGE', KEYS[2], 0, 0)[1] == owner
if redis.call('ZREM', KEYS[2], owner) == 1 then
  redis.call('HDEL', KEYS[3], owner)
  if was_head then mark_head() end
end
local token = held_token(owner)
if token then return {1, token} end
-- We may have been the writer that readers behind us were waiting for.
if not hand_over(channel, false, barge > 0) and announce then redis.call('PUBLISH', channel, 'r') end
return {0}
`);
