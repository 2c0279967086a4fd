import { SCRIPT_BASICS } from './redis-lock.scripts';

// Lua scripts of the Redis semaphore: one script per step (acquire, release, extend, leave the queue), so
// each is atomic on the server. Every key is passed in KEYS (one hash slot thanks to the hash tag).
//
// Keys of one semaphore: KEYS[1] holders ZSET  owner -> server time (ms) its lease ends
//                        KEYS[2] queue   ZSET  waiting owners, scored by arrival number (FIFO)
//                        KEYS[3] waiters HASH  owner -> "<ttlMs>:<aliveUntilMs>:<weight>:<claimMs>:<inbox>", plus
//                                              "#seq", the arrival counter
//                        KEYS[4] fence   STRING the last fencing token
//                        KEYS[5] info    HASH  n = the size (permits), u = the weight held,
//                                              w:<owner> = a holder's weight, t:<owner> = its fencing token
// ARGV[1] is always the owner id.

/** Holders' expiry, the size check, grants, and the hand-over to the waiters at the head of the queue. */
const SEMAPHORE_PRELUDE = `${SCRIPT_BASICS}
-- Holders whose lease ended are dropped and their weight given back. Returns the weight held now, and
-- how many holders were dropped. The holders' key lives as long as its longest lease: once it has expired
-- as a whole, nothing is held, whatever the count says.
local function live_used()
  if redis.call('EXISTS', KEYS[1]) == 0 then
    if redis.call('EXISTS', KEYS[5]) == 1 then redis.call('HSET', KEYS[5], 'u', 0) end
    return 0, 0
  end
  local now = now_ms()
  local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
  if #gone > 0 then
    local freed = 0
    for _, owner in ipairs(gone) do
      freed = freed + (tonumber(redis.call('HGET', KEYS[5], 'w:' .. owner)) or 1)
      redis.call('HDEL', KEYS[5], 'w:' .. owner, 't:' .. owner)
    end
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    redis.call('HINCRBY', KEYS[5], 'u', -freed)
  end
  return tonumber(redis.call('HGET', KEYS[5], 'u')) or 0, #gone
end

local function grant(owner, ttl, weight)
  local token = next_token()
  redis.call('ZADD', KEYS[1], now_ms() + ttl, owner)
  redis.call('HSET', KEYS[5], 'w:' .. owner, weight, 't:' .. owner, token)
  redis.call('HINCRBY', KEYS[5], 'u', weight)
  keep_for(KEYS[1], ttl)
  keep_for(KEYS[5], ttl)
  return token
end

-- A waiter's place: its lease, until when it is alive, its weight, its claim and its inbox (the rest of
-- the string: a channel name holds colons). Nil when it has none.
local function waiter_meta(owner)
  local meta = redis.call('HGET', KEYS[3], owner)
  if not meta then return nil end
  local a = string.find(meta, ':', 1, true)
  local b = string.find(meta, ':', a + 1, true)
  local c = string.find(meta, ':', b + 1, true)
  local d = string.find(meta, ':', c + 1, true)
  return tonumber(string.sub(meta, 1, a - 1)), tonumber(string.sub(meta, a + 1, b - 1)), tonumber(string.sub(meta, b + 1, c - 1)),
    tonumber(string.sub(meta, c + 1, d - 1)), string.sub(meta, d + 1)
end

-- Grant the waiters at the head of the queue while their weight fits: the first that does not fit stops
-- the rest (nobody overtakes). Waiters that stopped refreshing their place (dead) are dropped on the way.
-- Each is told on its client's inbox. Returns the weight held afterwards.
local function hand_over(used, permits)
  local now
  while true do
    local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
    if not head then return used end
    now = now or now_ms()
    local ttl, alive_until, weight, claim, inbox = waiter_meta(head)
    local alive = ttl ~= nil and alive_until >= now
    if alive and used + weight > permits then return used end
    redis.call('ZREM', KEYS[2], head)
    redis.call('HDEL', KEYS[3], head)
    if alive then
      -- Reserved for a short claim only, as a lock handed over: a waiter that died since its last refresh
      -- gives the place back soon; a live one extends it to its lease as soon as it hears.
      local token = grant(head, math.min(ttl, claim), weight)
      used = used + weight
      if inbox ~= '' then redis.call('PUBLISH', inbox, 'g ' .. head .. ' ' .. token) end
    end
  end
end

-- The semaphore's size: \`permits\` fits when the semaphore has no size yet or the same one, or when nobody
-- holds or waits any more (the size is then forgotten; the caller records its own with its grant or its
-- place in the queue). Returns the size it has when \`permits\` does not fit.
local function size_mismatch(permits)
  local n = tonumber(redis.call('HGET', KEYS[5], 'n'))
  if n == nil or n == permits then return nil end
  if redis.call('EXISTS', KEYS[1]) == 1 then return n end
  local now = now_ms()
  for _, owner in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local ttl, alive_until = waiter_meta(owner)
    if ttl ~= nil and alive_until >= now then return n end
  end
  redis.call('DEL', KEYS[2], KEYS[3])
  return nil
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
 * claim of a hand-over), inbox (the channel on which this waiter hears of a hand-over).
 * Returns {1, token} when held (a hand-over to this owner counts), {0, 0} when not, {-1, size} when the
 * semaphore is in use with another size.
 */
export const PERMIT_ACQUIRE_SCRIPT = `${SEMAPHORE_PRELUDE}
local owner, ttl, permits, weight = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local waiter, alive, inbox = ARGV[5] == '1', tonumber(ARGV[6]), ARGV[7] or ''
if not whole_ms(ttl) or not whole_ms(alive) then return redis.error_reply('ERR ttl and alive must be whole milliseconds') end
if not count(permits) or not count(weight) or weight > permits then return redis.error_reply('ERR permits and weight must be whole numbers, weight <= permits') end
-- Nobody holds and nobody waits: the places are free, whatever size the semaphore had.
if redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
  redis.call('HSET', KEYS[5], 'n', permits, 'u', 0)
  return {1, grant(owner, ttl, weight)}
end
local used, dropped = live_used()
-- A waiter checking on a hand-over it may have missed.
if redis.call('ZSCORE', KEYS[1], owner) then return {1, redis.call('HGET', KEYS[5], 't:' .. owner)} end
local other = size_mismatch(permits)
if other then return {-1, other} end
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if head and head ~= owner then
  -- Others are in line: they are served first (places freed by expired holders, or a lost race).
  used = hand_over(used, permits)
  if redis.call('ZSCORE', KEYS[1], owner) then return {1, redis.call('HGET', KEYS[5], 't:' .. owner)} end
  head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
end
if (not head or head == owner) and used + weight <= permits then
  if head == owner then
    redis.call('ZREM', KEYS[2], owner)
    redis.call('HDEL', KEYS[3], owner)
  end
  redis.call('HSET', KEYS[5], 'n', permits)
  return {1, grant(owner, ttl, weight)}
end
if waiter then
  if not redis.call('ZSCORE', KEYS[2], owner) then
    redis.call('ZADD', KEYS[2], redis.call('HINCRBY', KEYS[3], '#seq', 1), owner)
  end
  redis.call('HSET', KEYS[3], owner, string.format('%d:%d:%d:%d:%s', ttl, now_ms() + alive, weight, alive, inbox))
  redis.call('PEXPIRE', KEYS[2], alive * 4 + ttl)
  redis.call('PEXPIRE', KEYS[3], alive * 4 + ttl)
  redis.call('HSET', KEYS[5], 'n', permits)
  keep_for(KEYS[5], alive * 4 + ttl)
end
return {0, 0}
`;

/**
 * Release. ARGV: owner. The holder's weight goes back and the waiters at the head of the queue get what
 * fits. Returns 1 when the permit was this owner's, 0 when it was not (expired, removed).
 */
export const PERMIT_RELEASE_SCRIPT = `${SEMAPHORE_PRELUDE}
local owner = ARGV[1]
local used = live_used()
if redis.call('ZREM', KEYS[1], owner) == 0 then return 0 end
local weight = tonumber(redis.call('HGET', KEYS[5], 'w:' .. owner)) or 1
redis.call('HDEL', KEYS[5], 'w:' .. owner, 't:' .. owner)
redis.call('HINCRBY', KEYS[5], 'u', -weight)
local permits = tonumber(redis.call('HGET', KEYS[5], 'n'))
if permits then hand_over(used - weight, permits) end
return 1
`;

/** Extend. ARGV: owner, ttlMs. Returns 1 when extended, 0 when the permit is not this owner's. */
export const PERMIT_EXTEND_SCRIPT = `${SEMAPHORE_PRELUDE}
local owner, ttl = ARGV[1], tonumber(ARGV[2])
if not whole_ms(ttl) then return redis.error_reply('ERR ttl must be whole milliseconds') end
local used, dropped = live_used()
-- Places an expired holder gave back go to the queue now, not at a waiter's next check.
if dropped > 0 then
  local permits = tonumber(redis.call('HGET', KEYS[5], 'n'))
  if permits then hand_over(used, permits) end
end
if not redis.call('ZSCORE', KEYS[1], owner) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now_ms() + ttl, owner)
keep_for(KEYS[1], ttl)
keep_for(KEYS[5], ttl)
return 1
`;

/**
 * A waiter leaves the queue (timeout, abort). ARGV: owner. Returns {1, token} when a place was handed to
 * it meanwhile (the caller then holds it and must release it), {0} otherwise.
 */
export const PERMIT_LEAVE_SCRIPT = `${SEMAPHORE_PRELUDE}
local owner = ARGV[1]
redis.call('ZREM', KEYS[2], owner)
redis.call('HDEL', KEYS[3], owner)
local used = live_used()
if redis.call('ZSCORE', KEYS[1], owner) then return {1, redis.call('HGET', KEYS[5], 't:' .. owner)} end
-- We may have been a heavy waiter at the head, keeping lighter ones behind us waiting.
local permits = tonumber(redis.call('HGET', KEYS[5], 'n'))
if permits then hand_over(used, permits) end
return {0}
`;
