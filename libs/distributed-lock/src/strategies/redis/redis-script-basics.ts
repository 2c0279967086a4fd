// What every Lua script of the Redis strategies starts with (locks and semaphores alike).

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
