import type { LeaveReply } from './redis-lock.scripts';
import { SCRIPT_BASICS } from './redis-script-basics';
import { SEMAPHORE_PRELUDE } from './redis-semaphore.prelude';
import { lua } from './redis-script';

// The Lua scripts of the Redis semaphore, one per step; the keys they share and their helpers are described in
// redis-semaphore.prelude.ts.

/** A permit's acquire: owner, ttlMs, permits, weight, waiter, aliveMs, inbox, bargeMs (see PERMIT_ACQUIRE_SCRIPT). */
export type PermitAcquireArgs = [owner: string, ttlMs: number, permits: number, weight: number, waiter: '0' | '1', aliveMs: number, inbox: string, bargeMs: number];

/**
 * A permit's acquire reply: 1 and the token when held; 0, the newest token issued and the server's clock in
 * µs when not; -1 and the semaphore's size when it is in use with another size.
 */
export type PermitAcquireReply = [status: -1 | 0 | 1, tokenOrSize: number | string, serverUs?: string];

/**
 * A permit's release reply: 1 then, in pairs, the owners and tokens of this client's waiters it went to (token 0:
 * not a grant, the waiter is woken to try, barging mode); or 0 alone.
 */
export type PermitReleaseReply = [released: 0 | 1, ...toldOwnersAndTokens: Array<number | string>];

/**
 * Acquire. ARGV: owner, ttlMs, permits, weight, waiter ("1": join or refresh this owner's place in the
 * queue; "0": plain try), aliveMs (how long a queued waiter stays in line without refreshing, and the
 * claim of a hand-over), inbox (the channel on which this waiter hears of a hand-over), bargeMs (0 or
 * absent: strict FIFO; more: the barging window).
 * Returns {1, token} when held (a hand-over to this owner counts), {0, last token issued, server time in
 * µs} when not, {-1, size} when the semaphore is in use with another size.
 *
 * Barging (bargeMs > 0), as the lock's: a request whose weight fits while others are queued takes the places
 * as long as the queue's live head has been head for less than bargeMs (see live_head); a queued one leaves
 * the queue. Past the window the head is served first, strictly, and nobody overtakes it.
 */
export const PERMIT_ACQUIRE_SCRIPT = lua<PermitAcquireArgs, PermitAcquireReply>(`${SEMAPHORE_PRELUDE}
local owner, ttl, permits, weight = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local waiter, alive, inbox, barge = ARGV[5] == '1', tonumber(ARGV[6]), ARGV[7] or '', tonumber(ARGV[8] or '0') or 0
if not whole_ms(ttl) or not whole_ms(alive) then return redis.error_reply('ERR ttl and alive must be whole milliseconds') end
if barge ~= 0 and not whole_ms(barge) then return redis.error_reply('ERR bargeMs must be 0 or whole milliseconds') end
if not count(permits) or not count(weight) or weight > permits then return redis.error_reply('ERR permits and weight must be whole numbers, weight <= permits') end
local s = load('t:' .. owner)
-- Already a holder (its token is there only while it holds): a waiter checking on a hand-over it may have
-- missed, whose place reserved for its claim gets its whole lease; or the same request sent again (a client
-- resends a call whose reply a cut connection lost), which must not count its weight twice.
if s.extra then
  local ends = tonumber(redis.call('ZSCORE', KEYS[1], owner))
  if ends and ends > s.now then
    redis.call('ZADD', KEYS[1], 'XX', s.now + ttl, owner)
    s.keep = ttl
    save(s)
    return {1, s.extra}
  end
end
-- Nobody holds and nobody waits: the places are free, whatever size the semaphore had.
if s.u == 0 and redis.call('EXISTS', KEYS[2]) == 0 then
  s.n = permits
  local token = grant(s, owner, ttl, weight)
  save(s)
  return {1, token}
end
prune(s)
local other = size_mismatch(s, permits)
if other then
  save(s)
  return {-1, other}
end
if s.n ~= permits then
  s.n = permits
  s.changed = true
end
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if head and head ~= owner and barge > 0 then
  local live, _, _, since = live_head(s)
  head = live
  if live and live ~= owner and s.now - since < barge and s.u + weight <= permits then
    -- Barge: the head is within its window. Our own place in line, if any, is given up (the head stays).
    if waiter and redis.call('ZREM', KEYS[2], owner) == 1 then redis.call('HDEL', KEYS[3], owner) end
    local token = grant(s, owner, ttl, weight)
    if s.u < s.n then serve_head(s, barge, nil, nil) end
    save(s)
    return {1, token}
  end
end
-- Others are in line: they are served first (places freed by expired holders, a lost race, a barging
-- window that passed).
if head and head ~= owner then
  if hand_over(s, nil, nil, head) and redis.call('ZSCORE', KEYS[1], owner) then
    -- Handed a place on the way, for a claim: it gets its whole lease.
    redis.call('ZADD', KEYS[1], 'XX', s.now + ttl, owner)
    if ttl > s.keep then s.keep = ttl end
    save(s)
    return {1, redis.call('HGET', KEYS[4], 't:' .. owner)}
  end
  if s.queue_changed then head = redis.call('ZRANGE', KEYS[2], 0, 0)[1] end
end
if (not head or head == owner) and s.u + weight <= permits then
  if head == owner then
    redis.call('ZREM', KEYS[2], owner)
    redis.call('HDEL', KEYS[3], owner)
  end
  local token = grant(s, owner, ttl, weight)
  -- A head woken to try took its places: the next one, when what is left fits it, is served in turn.
  if head == owner and barge > 0 and s.u < s.n then serve_head(s, barge, nil, nil) end
  save(s)
  return {1, token}
end
if waiter then
  -- A place at the end of the line, or the one we have (NX keeps its arrival number). Barging: one that
  -- joins an empty line is its head from now on, and its window counts from its arrival.
  local joined = redis.call('ZADD', KEYS[2], 'NX', redis.call('HINCRBY', KEYS[3], '#seq', 1), owner) == 1
  if joined and barge > 0 and redis.call('ZCARD', KEYS[2]) == 1 then
    redis.call('HSET', KEYS[3], '#head', string.format('%d:0:%s', s.now, owner))
  end
  redis.call('HSET', KEYS[3], owner, string.format('%d:%d:%d:%d:%s', ttl, s.now + alive, weight, alive, inbox))
  redis.call('PEXPIRE', KEYS[2], alive * 4 + ttl)
  redis.call('PEXPIRE', KEYS[3], alive * 4 + ttl)
  s.keep = math.max(s.keep, alive * 4 + ttl)
end
save(s)
-- Not held: the last token issued and the clock (µs), by which a waiter tells a hand-over that came
-- before this check (which found it gone: its claim ran out) from one that comes after it.
return {0, string.format('%d', s.f), string.format('%d', s.now_us)}
`);

/**
 * Release. ARGV: owner, inbox (this client's), bargeMs (0 or absent: strict FIFO). The holder's weight goes
 * back and the waiters at the head of the queue get what fits: each is told on its inbox, except this
 * client's own waiters, which are returned instead. Barging mode, a barging head within its window (see
 * serve_head): the places are left free, for whoever comes first, and the head, when its weight fits, is
 * woken to try ("w <owner>" on its inbox; token 0 in the reply for this client's own), once per turn as
 * head. Past the window, or to a fair head, the places are handed over as in fair mode. Returns {1, owner, token, …} when the
 * permit was this owner's, {0} when it was not (expired, removed).
 */
export const PERMIT_RELEASE_SCRIPT = lua<[owner: string, inbox: string, bargeMs: number], PermitReleaseReply>(`${SEMAPHORE_PRELUDE}
local owner, barge = ARGV[1], tonumber(ARGV[3] or '0') or 0
local s = load('w:' .. owner)
prune(s)
if redis.call('ZREM', KEYS[1], owner) == 0 then
  save(s)
  return {0}
end
s.u = math.max(0, s.u - (tonumber(s.extra) or 0))
s.changed = true
redis.call('HDEL', KEYS[4], 'w:' .. owner, 't:' .. owner)
local told = {1}
if barge > 0 then serve_head(s, barge, ARGV[2], told) else hand_over(s, ARGV[2], told) end
save(s)
return told
`);

/** Extend. ARGV: owner, ttlMs. Returns 1 when extended, 0 when the permit is not this owner's. */
export const PERMIT_EXTEND_SCRIPT = lua<[owner: string, ttlMs: number], 0 | 1>(`${SEMAPHORE_PRELUDE}
local owner, ttl = ARGV[1], tonumber(ARGV[2])
if not whole_ms(ttl) then return redis.error_reply('ERR ttl must be whole milliseconds') end
local s = load()
-- Places an expired holder gave back go to the queue now, not at a waiter's next check.
if prune(s) > 0 then hand_over(s, nil, nil) end
local held = redis.call('ZADD', KEYS[1], 'XX', 'CH', s.now + ttl, owner) == 1 or redis.call('ZSCORE', KEYS[1], owner)
if held then s.keep = ttl end
save(s)
return held and 1 or 0
`);

/**
 * Held? ARGV: owner. Returns 1 when the owner holds a place whose lease has not ended, 0 otherwise. Writes
 * nothing: the check of every permit after a reconnection (RedisLeaseCheck).
 */
export const PERMIT_HELD_SCRIPT = lua<[owner: string], 0 | 1>(`${SCRIPT_BASICS}
local ends = redis.call('ZSCORE', KEYS[1], ARGV[1])
if ends and tonumber(ends) > now_ms() then return 1 end
return 0
`);

/**
 * A waiter leaves the queue (timeout, abort). ARGV: owner. Returns {1, token} when a place was handed to
 * it meanwhile (the caller then holds it and must release it), {0} otherwise.
 */
export const PERMIT_LEAVE_SCRIPT = lua<[owner: string], LeaveReply>(`${SEMAPHORE_PRELUDE}
local owner = ARGV[1]
redis.call('ZREM', KEYS[2], owner)
redis.call('HDEL', KEYS[3], owner)
local s = load('t:' .. owner)
prune(s)
if s.extra and redis.call('ZSCORE', KEYS[1], owner) then
  save(s)
  return {1, s.extra}
end
-- We may have been a heavy waiter at the head, keeping lighter ones behind us waiting.
hand_over(s, nil, nil)
save(s)
return {0}
`);

/**
 * A semaphore's state for `LockService.queryPermits`, read only. ARGV: the most holders and waiters to list.
 * Reply: the server's clock (ms), the size ('' when unknown), the live holders as owner, lease end (ms),
 * weight, token, and the live waiters in queue order as owner, weight.
 */
export type PermitInspectReply = [nowMs: number, permits: string, holders: string[], waiters: string[]];

export const PERMIT_INSPECT_SCRIPT = lua<[limit: number], PermitInspectReply>(`${SEMAPHORE_PRELUDE}
local now = now_ms()
local limit = tonumber(ARGV[1])
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
local holders = {}
for i = 1, #live, 2 do
  local held = redis.call('HMGET', KEYS[4], 'w:' .. live[i], 't:' .. live[i])
  holders[#holders + 1] = live[i]
  holders[#holders + 1] = live[i + 1]
  -- A holder whose weight the info lost was never counted in it (see prune): 0, not a guess.
  holders[#holders + 1] = held[1] or '0'
  holders[#holders + 1] = held[2] or ''
end
local waiters = {}
local queue = redis.call('ZRANGE', KEYS[2], 0, limit - 1)
if #queue > 0 then
  local metas = redis.call('HMGET', KEYS[3], unpack(queue))
  for i, owner in ipairs(queue) do
    local ttl, alive_until, weight = parse_meta(metas[i])
    if ttl ~= nil and alive_until >= now then
      waiters[#waiters + 1] = owner
      waiters[#waiters + 1] = weight
    end
  end
end
return {now, (#live > 0 or #waiters > 0) and (redis.call('HGET', KEYS[4], 'n') or '') or '', holders, waiters}
`);
