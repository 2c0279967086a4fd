import type { LeaveReply } from './redis-lock.scripts';
import { SCRIPT_BASICS } from './redis-script-basics';
import { lua } from './redis-script';

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

// Lua scripts of the Redis semaphore: one script per step (acquire, release, extend, leave the queue), so
// each is atomic on the server. Every key is passed in KEYS (one hash slot thanks to the hash tag).
//
// Keys of one semaphore: KEYS[1] holders ZSET  owner -> server time (ms) its lease ends
//                        KEYS[2] queue   ZSET  waiting owners, scored by arrival number (FIFO)
//                        KEYS[3] waiters HASH  owner -> "<ttlMs>:<aliveUntilMs>:<weight>:<claimMs>:<inbox>", plus
//                                              "#seq", the arrival counter, and in barging mode "#head",
//                                              "<sinceMs>:<woken 0|1>:<owner>" (see live_head)
//                        KEYS[4] info    HASH  n = the size (permits), u = the weight held, f = the last fencing
//                                              token, w:<owner> = a holder's weight, t:<owner> = its token
// The holders and the info expire together (one TTL, the longest lease or place in line), so that the
// weight held never outlives the holders it counts. ARGV[1] is always the owner id.
//
// Every redis.call costs server time on the path of every permit: the state a script needs is read with one
// HMGET and written back with one HSET, and the clock is read once.

const SEMAPHORE_PRELUDE = `${SCRIPT_BASICS}
-- The semaphore's state, read once: the clock, the size, the weight held, the last token.
local function load(extra)
  local t = redis.call('TIME')
  local v = redis.call('HMGET', KEYS[4], 'n', 'u', 'f', extra or 'n')
  return {
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
    now_us = tonumber(t[1]) * 1000000 + tonumber(t[2]),
    n = tonumber(v[1]), u = tonumber(v[2]) or 0, f = tonumber(v[3]) or 0, extra = v[4],
    -- How long the holders and the info must live from now on (0: as they are); whether the holders'
    -- key is made anew by this script (it then takes the info's TTL).
    keep = 0, changed = false, fresh = false,
  }
end

-- Writes the state back, and gives the holders and the info one and the same TTL, of at least s.keep ms:
-- the info (the weight held, the holders' weights) never ends before a holder's lease.
local function save(s)
  if s.changed then
    redis.call('HSET', KEYS[4], 'n', s.n, 'u', s.u, 'f', string.format('%d', s.f))
  end
  if s.keep == 0 and not s.fresh then return end
  local left = redis.call('PTTL', KEYS[4])
  local target = math.max(left, s.keep)
  if left < s.keep then redis.call('PEXPIRE', KEYS[4], target) end
  if left < s.keep or s.fresh then redis.call('PEXPIRE', KEYS[1], target) end
end

-- Holders whose lease ended are dropped and their weight given back. Returns how many were dropped.
local function prune(s)
  local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', s.now)
  if #gone == 0 then return 0 end
  local fields = {}
  for _, owner in ipairs(gone) do
    fields[#fields + 1] = 'w:' .. owner
    fields[#fields + 1] = 't:' .. owner
  end
  local values = redis.call('HMGET', KEYS[4], unpack(fields))
  -- A holder without its weight in the info was never counted in it (the info was lost).
  for i = 1, #values, 2 do s.u = s.u - (tonumber(values[i]) or 0) end
  if s.u < 0 then s.u = 0 end
  redis.call('HDEL', KEYS[4], unpack(fields))
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', s.now)
  s.changed = true
  return #gone
end

-- A grant: the next fencing token, strictly increasing also across a data loss (the larger of the last
-- token plus one and the server's clock in microseconds, as the lock's), and a lease of \`ttl\`.
local function grant(s, owner, ttl, weight)
  local token = math.max(s.f + 1, s.now_us)
  -- Nothing held before: the holders' key is made by this grant (see save).
  if s.u == 0 then s.fresh = true end
  s.f = token
  s.u = s.u + weight
  s.changed = true
  redis.call('ZADD', KEYS[1], s.now + ttl, owner)
  redis.call('HSET', KEYS[4], 'w:' .. owner, weight, 't:' .. owner, string.format('%d', token))
  if ttl > s.keep then s.keep = ttl end
  return string.format('%d', token)
end

-- A waiter's place: its lease, until when it is alive, its weight, its claim and its inbox (the rest of
-- the string: a channel name holds colons), from its entry in KEYS[3]. Nil when it has none.
local function parse_meta(meta)
  if not meta then return nil end
  local a = string.find(meta, ':', 1, true)
  local b = string.find(meta, ':', a + 1, true)
  local c = string.find(meta, ':', b + 1, true)
  local d = string.find(meta, ':', c + 1, true)
  return tonumber(string.sub(meta, 1, a - 1)), tonumber(string.sub(meta, a + 1, b - 1)), tonumber(string.sub(meta, b + 1, c - 1)),
    tonumber(string.sub(meta, c + 1, d - 1)), string.sub(meta, d + 1)
end

local function waiter_meta(owner)
  return parse_meta(redis.call('HGET', KEYS[3], owner))
end

-- Grant the waiters at the head of the queue while their weight fits: the first that does not fit stops
-- the rest (nobody overtakes). Waiters that stopped refreshing their place (dead) are dropped on the way.
-- Each is told on its client's inbox, except those whose inbox is \`local_inbox\` (the caller's own client):
-- they are listed in \`told\` (owner, token, …) for the caller to tell, without a message.
local function hand_over(s, local_inbox, told, first)
  if not s.n then return false end
  local granted = false
  local head = first
  while true do
    -- Full: nobody can be granted (a dead waiter at the head goes at the next release).
    if s.u >= s.n then return granted end
    head = head or redis.call('ZRANGE', KEYS[2], 0, 0)[1]
    if not head then return granted end
    local ttl, alive_until, weight, claim, inbox = waiter_meta(head)
    local alive = ttl ~= nil and alive_until >= s.now
    if alive and s.u + weight > s.n then return granted end
    redis.call('ZREM', KEYS[2], head)
    redis.call('HDEL', KEYS[3], head)
    s.queue_changed = true
    if alive then
      granted = true
      -- Reserved for a short claim only, as a lock handed over: a waiter that died since its last refresh
      -- gives the place back soon; a live one extends it to its lease as soon as it hears.
      local token = grant(s, head, math.min(ttl, claim), weight)
      if inbox == local_inbox and told then
        told[#told + 1] = head
        told[#told + 1] = token
      elseif inbox ~= '' then
        redis.call('PUBLISH', inbox, 'g ' .. head .. ' ' .. token)
      end
    end
    head = nil
  end
end

-- The semaphore's size: \`permits\` fits when the semaphore has no size yet or the same one, or when nobody
-- holds or waits any more (the size is then forgotten). Returns the size it has when \`permits\` does not fit.
local function size_mismatch(s, permits)
  if s.n == nil or s.n == permits then return nil end
  if s.u > 0 then return s.n end
  for _, owner in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local ttl, alive_until = waiter_meta(owner)
    if ttl ~= nil and alive_until >= s.now then return s.n end
  end
  redis.call('DEL', KEYS[2], KEYS[3])
  return nil
end

-- Barging mode: the first live waiter, its weight and inbox, since when it has been the head (server ms)
-- and whether a release woke it already. Dead waiters before it are dropped. "#head" names the head it
-- stamps, so that a change of head (a grant, a leave, a drop, by any script of either mode) is seen by the
-- first barging script that comes after it, and the new head's window starts then. Nil when nobody lives.
local function live_head(s)
  while true do
    local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
    if not head then return nil end
    local info = redis.call('HMGET', KEYS[3], head, '#head')
    local ttl, alive_until, weight, _, inbox = parse_meta(info[1])
    if ttl ~= nil and alive_until >= s.now then
      local mark = info[2]
      if mark then
        local a = string.find(mark, ':', 1, true)
        if a and string.sub(mark, a + 3) == head then
          return head, weight, inbox, tonumber(string.sub(mark, 1, a - 1)), string.sub(mark, a + 1, a + 1) == '1'
        end
      end
      redis.call('HSET', KEYS[3], '#head', string.format('%d:0:%s', s.now, head))
      return head, weight, inbox, s.now, false
    end
    redis.call('ZREM', KEYS[2], head)
    redis.call('HDEL', KEYS[3], head)
    s.queue_changed = true
  end
end

-- Barging mode, after a release or a grant that left places free: a barging head (its inbox ends in ":b",
-- see RedisInbox) within its window is woken to try when its weight fits, once per turn as head, and the
-- places stay free for whoever asks first; a head past its window, or a fair one (an instance with fair
-- mode on the same key, or of an earlier version), is handed what fits, as a fair release does. Wakes for
-- this client's own waiters go in \`told\` with token 0 instead of a message (when \`told\` is given).
local function serve_head(s, barge, local_inbox, told)
  if s.n then
    local head, weight, inbox, since, woken = live_head(s)
    if not head then return end
    if s.now - since < barge and string.sub(inbox, -2) == ':b' then
      if not woken and s.u + weight <= s.n then
        redis.call('HSET', KEYS[3], '#head', string.format('%d:1:%s', since, head))
        if told and inbox == local_inbox then
          told[#told + 1] = head
          told[#told + 1] = 0
        else
          redis.call('PUBLISH', inbox, 'w ' .. head)
        end
      end
      return
    end
  end
  hand_over(s, local_inbox, told)
end

-- Whole numbers only: a size and a weight from 1 to 1e6 (the lock service checks them first).
local function count(value)
  local n = tonumber(value)
  return n ~= nil and n >= 1 and n <= 1000000 and n == math.floor(n)
end
`;

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
