import { SCRIPT_BASICS } from './redis-script-basics';

// The helpers every Lua script of the Redis semaphore shares. The scripts (redis-semaphore.scripts.ts) are one
// per step (acquire, release, extend, leave the queue), so each is atomic on the server. Every key is passed in
// KEYS (one hash slot thanks to the hash tag).
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

export const SEMAPHORE_PRELUDE = `${SCRIPT_BASICS}
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
