// The helpers every lock script shares (the keys of one lock are described in redis-lock.scripts.ts).
import { SCRIPT_BASICS } from './redis-script-basics';

/** Shared helpers of the lock scripts: the basics, readers, the hand-over to the first live waiters. */
export const LOCK_PRELUDE = `${SCRIPT_BASICS}-- Readers whose lease ended are dropped (their tokens too). Cheap when there are no readers.
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
    redis.call('HSET', KEYS[1], 'o', owner, 'c', 1, 't', token, 'g', token .. ':' .. now_ms())
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

-- A queued waiter's entry: ttl, alive-until, mode, claim, joined (server ms) and inbox. Entries written by
-- earlier versions of this script have no join time (then 0: the window counts from "#head" alone), no claim
-- (the whole lease) or no inbox (the lock's channel). The inbox is the last field and holds ':' itself (the
-- namespace, "inbox:"), so the fields before it are counted, and a fifth field is a join time only when it
-- is a number followed by another ':'. nil for a missing entry.
local function parse_waiter(meta, channel)
  if not meta then return nil end
  local a = string.find(meta, ':', 1, true)
  local b = string.find(meta, ':', a + 1, true)
  local c = b and string.find(meta, ':', b + 1, true)
  local d = c and string.find(meta, ':', c + 1, true)
  local w = { ttl = tonumber(string.sub(meta, 1, a - 1)), alive = tonumber(string.sub(meta, a + 1, b - 1)), joined = 0, inbox = channel }
  w.mode = string.sub(meta, b + 1, (c or 0) - 1)
  w.claim = c and tonumber(string.sub(meta, c + 1, (d or 0) - 1)) or w.ttl
  if d and d < #meta then
    local e = string.find(meta, ':', d + 1, true)
    local joined = e and string.match(string.sub(meta, d + 1, e - 1), '^%d+$')
    if joined then
      w.joined = tonumber(joined)
      if e < #meta then w.inbox = string.sub(meta, e + 1) end
    else
      w.inbox = string.sub(meta, d + 1)
    end
  end
  return w
end

-- The first \`limit\` waiters of the queue that still refresh their place, in order, as {owner, mode, ...}
-- pairs flattened (what a query lists: a hand-over would skip the others).
local function live_waiters(limit, now)
  local waiters = {}
  local queue = redis.call('ZRANGE', KEYS[2], 0, limit - 1)
  if #queue == 0 then return waiters end
  local metas = redis.call('HMGET', KEYS[3], unpack(queue))
  for i, owner in ipairs(queue) do
    local w = parse_waiter(metas[i], '')
    if w and w.alive >= now then
      waiters[#waiters + 1] = owner
      waiters[#waiters + 1] = w.mode
    end
  end
  return waiters
end

-- Barging mode: the head of the queue changed (handed the lock, left, dropped dead, took the lock), so the
-- new head's window starts now. The hash keeps its lifetime ("#seq" is in it); one made afresh here (it
-- expired between two calls) gets the queue's.
local function mark_head()
  if redis.call('HSET', KEYS[3], '#head', now_ms()) == 1 and redis.call('PTTL', KEYS[3]) == -1 then
    redis.call('PEXPIRE', KEYS[3], math.max(redis.call('PTTL', KEYS[2]), 1))
  end
end

-- Barging mode: the first live waiter (name, entry), since when it has been the head (server ms), and the
-- head a release last woke ("#woke"); nil when nobody live waits. Dead waiters before it are dropped, as
-- hand_over drops them (the head then changed).
local function live_head()
  local now = now_ms()
  local dropped = false
  while true do
    local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
    if not head then
      if dropped then mark_head() end
      return nil
    end
    local info = redis.call('HMGET', KEYS[3], head, '#head', '#woke')
    local w = parse_waiter(info[1], '')
    if w and w.alive >= now then
      if dropped then
        mark_head()
        return head, w, now, info[3]
      end
      -- "Head for how long" counts from the later of its join and the last change of head. From the join
      -- alone, under constant contention every waiter has waited longer than any window of a few ms by the
      -- time it is head, and the lock would stay strict FIFO for ever (a process woken per section). From
      -- the change of head, an awake process keeps the lock for a bounded burst, then the head gets it
      -- strictly, and becomes the process that bursts in turn.
      return head, w, math.max(w.joined, tonumber(info[2]) or 0), info[3]
    end
    redis.call('ZREM', KEYS[2], head)
    redis.call('HDEL', KEYS[3], head)
    dropped = true
  end
end

-- Hand the free lock to the waiters at the head of the queue: the first writer alone, or every reader up
-- to the next writer. Waiters that stopped refreshing their place (dead) are dropped on the way.
-- \`no_writer\`: true when the caller knows no writer holds (granting readers does not change that).
-- \`barging\`: note a change of head for the barging window (see live_head).
local function hand_over(channel, no_writer, barging)
  local writer = nil
  if no_writer then writer = false end
  local now
  local granted = false
  local popped = false
  while true do
    local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
    if not head then break end
    now = now or now_ms()
    local w = parse_waiter(redis.call('HGET', KEYS[3], head), channel)
    local alive = w ~= nil and w.alive >= now
    if alive and not grantable(w.mode, writer) then break end
    redis.call('ZREM', KEYS[2], head)
    redis.call('HDEL', KEYS[3], head)
    popped = true
    if alive then
      -- Handed over for a short claim only: a waiter that died since its last refresh (killed, or its
      -- client closed) leaves the lock free again after it, instead of after a whole lease. A live
      -- waiter turns the claim into its lease with an extension as soon as it hears of the hand-over.
      local token = grant(head, math.min(w.ttl, w.claim), w.mode)
      -- Told on its own client's inbox: only the waiter's connection hears it, however many wait.
      redis.call('PUBLISH', w.inbox, 'g ' .. head .. ' ' .. token)
      granted = true
      if w.mode ~= 's' then break end
    end
  end
  if popped and barging then mark_head() end
  return granted
end

-- The token of a lock this owner holds (as writer or reader), or nil.
local function held_token(owner)
  if redis.call('HGET', KEYS[1], 'o') == owner then return redis.call('HGET', KEYS[1], 't') end
  if redis.call('ZSCORE', KEYS[5], owner) then return redis.call('HGET', KEYS[1], 'r:' .. owner) end
  return nil
end
`;
