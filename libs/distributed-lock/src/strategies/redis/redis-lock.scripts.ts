// Lua scripts of the Redis strategies. Each lock operation is one script, so it is atomic on the server:
// never SETNX followed by EXPIRE, never GET followed by DEL. Every key a script touches is passed in
// KEYS (one hash slot thanks to the hash tag); every value in ARGV.
//
// Keys of one lock:  KEYS[1] lock    HASH  o = writer, c = its hold count, t = its fencing token;
//                                           r:<owner> = a reader's fencing token
//                    KEYS[2] queue   ZSET  waiting owners, scored by arrival number (FIFO)
//                    KEYS[3] waiters HASH  owner -> "<ttlMs>:<aliveUntilMs>:<x|s>:<claimMs>:<inbox>", plus "#seq", the
//                                          arrival counter; <inbox> is the waiter's client channel (may be empty)
//                    KEYS[4] fence   STRING the last fencing token ("" or KEYS[1] for none: tokens are then 0)
//                    KEYS[5] readers ZSET  reader owners, scored by the server time their lease ends
// ARGV[1] is always the owner id; ARGV[2] the channel on which releases and hand-overs are announced.

import { lua } from './redis-script';

/** Acquire's arguments: owner, channel, ttlMs, fair, waiter, aliveMs, mode, inbox (see ACQUIRE_SCRIPT). */
export type AcquireArgs = [owner: string, channel: string, ttlMs: number, fair: '0' | '1', waiter: '0' | '1', aliveMs: number, mode: 'x' | 's', inbox: string];

/**
 * Acquire's reply: held (1) with the token; or not (0), with a waiter's view of the newest token issued and
 * the server's clock in µs (both "0"-less strings), or 0 for a plain try.
 */
export type AcquireReply = [held: 0 | 1, token: number | string, serverUs?: string];

/** Leaving a queue: 1 with the token of a grant that came at the last moment (the caller must give it back), else 0. */
export type LeaveReply = [handed: 0 | 1, token?: number | string];

/**
 * Helpers every script of the Redis strategy shares (locks and semaphores): the server's clock, fencing
 * tokens from the counter in KEYS[4], whole-millisecond checks, key lifetimes.
 */
export const SCRIPT_BASICS = `
-- The server's clock, read once per script: every use in one script sees the same instant, for one TIME.
local clock_us
local function now_us()
  if not clock_us then
    local t = redis.call('TIME')
    clock_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return clock_us
end

local function now_ms()
  return math.floor(now_us() / 1000)
end

-- Strictly increasing per key, also across a data loss or a failover: the larger of the last token plus one
-- and the server's clock in microseconds. A last token that comes back stale (an RDB snapshot, an AOF synced
-- every second, a replica that lagged) would hand out tokens again; the clock is past every token issued
-- before (one grant takes far more than a microsecond), as long as the new server's clock is not behind
-- the old one's by more than the outage. The week-long expiry keeps idle counters from piling up.
-- Tokens travel as decimal strings: Lua 5.1 would print a 16-digit number as "1.79e+15" and lose digits.
local function next_token()
  -- No fence key (the first master of a Redlock, whose counter alone could not fence): no token. Redlock
  -- passes the lock key again rather than '', which a user's ACL key pattern (~namespace*) refuses.
  if KEYS[4] == '' or KEYS[4] == KEYS[1] then return '0' end
  local last = tonumber(redis.call('GET', KEYS[4]) or '0')
  local token = now_us()
  if token <= last then token = last + 1 end
  local text = string.format('%.0f', token)
  redis.call('SET', KEYS[4], text, 'PX', 604800000)
  return text
end

-- Durations reach the server as whole milliseconds (the lock service rounds them); anything else is
-- refused here before the first write, since a script's earlier writes stay when a later command fails
-- (PEXPIRE "1000.5" would leave a lock with no expiry at all).
local function whole_ms(value)
  local n = tonumber(value)
  return n ~= nil and n >= 1 and n == math.floor(n) and n < 4294967296
end

-- A key that several holders share (readers, permits) lives at least as long as the longest lease among them.
local function keep_for(key, ttl)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end

`;

/** Shared helpers of the lock scripts: the basics, readers, the hand-over to the first live waiters. */
const PRELUDE = `${SCRIPT_BASICS}-- Readers whose lease ended are dropped (their tokens too). Cheap when there are no readers.
local function live_readers()
  if redis.call('EXISTS', KEYS[5]) == 0 then return 0 end
  local now = now_ms()
  for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now)) do
    redis.call('HDEL', KEYS[1], 'r:' .. gone)
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
  return redis.call('ZCARD', KEYS[5])
end

local function grant(owner, ttl, mode)
  local token = next_token()
  if mode == 's' then
    redis.call('ZADD', KEYS[5], now_ms() + ttl, owner)
    redis.call('HSET', KEYS[1], 'r:' .. owner, token)
    keep_for(KEYS[5], ttl)
    keep_for(KEYS[1], ttl)
  else
    redis.call('HSET', KEYS[1], 'o', owner, 'c', 1, 't', token)
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  return token
end

-- A mode may be granted when no writer holds, and (for a writer) no reader either. \`writer\`: the holder
-- the caller already read (false: none), or nil to read it here. Every redis.call costs server time on the
-- path of every lock, so known facts are passed on rather than read twice.
local function grantable(mode, writer)
  if writer == nil then writer = redis.call('HGET', KEYS[1], 'o') end
  if writer then return false end
  return mode == 's' or live_readers() == 0
end

-- Hand the free lock to the waiters at the head of the queue: the first writer alone, or every reader up
-- to the next writer. Waiters that stopped refreshing their place (dead) are dropped on the way.
-- \`no_writer\`: true when the caller knows no writer holds (granting readers does not change that).
local function hand_over(channel, no_writer)
  local writer = nil
  if no_writer then writer = false end
  local now
  local granted = false
  while true do
    local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
    if not head then return granted end
    now = now or now_ms()
    local meta = redis.call('HGET', KEYS[3], head)
    local alive = false
    local ttl, mode, claim
    local inbox = channel
    if meta then
      local a = string.find(meta, ':', 1, true)
      local b = string.find(meta, ':', a + 1, true)
      local c = b and string.find(meta, ':', b + 1, true)
      local d = c and string.find(meta, ':', c + 1, true)
      ttl = tonumber(string.sub(meta, 1, a - 1))
      alive = tonumber(string.sub(meta, a + 1, b - 1)) >= now
      -- A waiter queued by an earlier version of this script has no claim (it gets its whole lease) and
      -- no inbox (it hears of the hand-over on the lock's channel).
      mode = string.sub(meta, b + 1, (c or 0) - 1)
      claim = c and tonumber(string.sub(meta, c + 1, (d or 0) - 1)) or ttl
      if d and d < #meta then inbox = string.sub(meta, d + 1) end
    end
    if alive and not grantable(mode, writer) then return granted end
    redis.call('ZREM', KEYS[2], head)
    redis.call('HDEL', KEYS[3], head)
    if alive then
      -- Handed over for a short claim only: a waiter that died since its last refresh (killed, or its
      -- client closed) leaves the lock free again after it, instead of after a whole lease. A live
      -- waiter turns the claim into its lease with an extension as soon as it hears of the hand-over.
      local token = grant(head, math.min(ttl, claim), mode)
      -- Told on its own client's inbox: only the waiter's connection hears it, however many wait.
      redis.call('PUBLISH', inbox, 'g ' .. head .. ' ' .. token)
      granted = true
      if mode ~= 's' then return true end
    end
  end
end

-- The token of a lock this owner holds (as writer or reader), or nil.
local function held_token(owner)
  if redis.call('HGET', KEYS[1], 'o') == owner then return redis.call('HGET', KEYS[1], 't') end
  if redis.call('ZSCORE', KEYS[5], owner) then return redis.call('HGET', KEYS[1], 'r:' .. owner) end
  return nil
end
`;

/**
 * Acquire. ARGV: owner, channel, ttlMs, fair ("1"/"0"), waiter ("1": enqueue or refresh this owner's place;
 * "0": plain try), aliveMs (how long a queued waiter stays in line without refreshing), mode ("x"/"s"),
 * inbox (the channel on which this waiter hears that the lock was handed to it; "" for the lock's channel).
 * Returns {1, token} when held (a hand-over to this waiter counts), {0, 0} when not; a waiter's {0, writer's
 * token or 0, server time in µs}.
 */
export const ACQUIRE_SCRIPT = lua<AcquireArgs, AcquireReply>(`${PRELUDE}
local owner, channel, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local fair, waiter, alive, mode, inbox = ARGV[4] == '1', ARGV[5] == '1', tonumber(ARGV[6]), ARGV[7], ARGV[8] or ''
if not whole_ms(ttl) or not whole_ms(alive) then return redis.error_reply('ERR ttl and alive must be whole milliseconds') end
if mode ~= 'x' and mode ~= 's' then return redis.error_reply('ERR mode must be x or s') end
-- Nothing held, nobody in line and no reader entries (not even stale ones): the lock is free, at the cost
-- of one command instead of three (holder, queue head, readers), the common case of an uncontended lock.
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[5]) == 0 then return {1, grant(owner, ttl, mode)} end
local writer = redis.call('HGET', KEYS[1], 'o')
if mode == 'x' and writer == owner then
  -- A waiter checking on a hand-over it may have missed does not add a hold; a same-owner request re-enters.
  if not waiter then redis.call('HINCRBY', KEYS[1], 'c', 1) end
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
local queued = fair and redis.call('ZRANGE', KEYS[2], 0, 0)[1]
local free = grantable(mode, writer)
if free and queued and queued ~= owner then
  -- Others are in line (a release that found nobody alive, or a lost race): serve them first.
  hand_over(channel, not writer)
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
  end
  return {1, grant(owner, ttl, mode)}
end
if waiter then
  if not redis.call('ZSCORE', KEYS[2], owner) then
    redis.call('ZADD', KEYS[2], redis.call('HINCRBY', KEYS[3], '#seq', 1), owner)
  end
  redis.call('HSET', KEYS[3], owner, string.format('%d:%d:%s:%d:%s', ttl, now_ms() + alive, mode, alive, inbox))
  redis.call('PEXPIRE', KEYS[2], alive * 4 + ttl)
  redis.call('PEXPIRE', KEYS[3], alive * 4 + ttl)
  -- The writer's token (the newest issued while a writer holds) and the clock (µs), by which the waiter
  -- tells a hand-over that came before this check (which found it gone: its claim ran out) from a later one.
  return {0, redis.call('HGET', KEYS[1], 't') or '0', string.format('%.0f', now_us())}
end
return {0, 0}
`);

/**
 * Release. ARGV: owner, channel, announce ("0": the lock's waiters are all in its queue, as fair ones are,
 * and nobody listens on the channel; anything else: announce a free lock there, for barging waiters). A
 * writer drops one hold (the last frees the lock); a reader leaves. A freed lock goes to the first live
 * waiters, or is announced free. Returns 1 when the lock was this owner's, 0 when it was not.
 */
export const RELEASE_SCRIPT = lua<[owner: string, channel: string, announce?: '0' | '1'], 0 | 1>(`${PRELUDE}
local owner, channel, announce = ARGV[1], ARGV[2], ARGV[3] ~= '0'
local holder = redis.call('HMGET', KEYS[1], 'o', 'c')
if holder[1] == owner then
  if (tonumber(holder[2]) or 1) > 1 then
    redis.call('HINCRBY', KEYS[1], 'c', -1)
    return 1
  end
  redis.call('HDEL', KEYS[1], 'o', 'c', 't')
elseif redis.call('ZREM', KEYS[5], owner) == 1 then
  redis.call('HDEL', KEYS[1], 'r:' .. owner)
else
  return 0
end
-- No writer holds now: the one that left was the writer, or a reader (never beside a writer).
if not hand_over(channel, true) and announce then redis.call('PUBLISH', channel, 'r') end
return 1
`);

/** Extend. ARGV: owner, channel (unused), ttlMs. Returns 1 when extended, 0 when the lock is not this owner's. */
export const EXTEND_SCRIPT = lua<[owner: string, channel: string, ttlMs: number], 0 | 1>(`${PRELUDE}
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
 * A waiter leaves the queue (timeout, abort). ARGV: owner, channel. Returns {1, token} when the lock was
 * handed to it meanwhile (the caller then owns it and must release it), {0} otherwise.
 */
export const LEAVE_QUEUE_SCRIPT = lua<[owner: string, channel: string], LeaveReply>(`${PRELUDE}
local owner, channel = ARGV[1], ARGV[2]
redis.call('ZREM', KEYS[2], owner)
redis.call('HDEL', KEYS[3], owner)
local token = held_token(owner)
if token then return {1, token} end
-- We may have been the writer that readers behind us were waiting for.
if not hand_over(channel) then redis.call('PUBLISH', channel, 'r') end
return {0}
`);

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
