// Lua scripts of the Redis strategies. Each lock operation is one script, so it is atomic on the server:
// never SETNX followed by EXPIRE, never GET followed by DEL. Every key a script touches is passed in
// KEYS (one hash slot thanks to the hash tag); every value in ARGV.
//
// Keys of one lock:  KEYS[1] lock    HASH  o = writer, c = its hold count, t = its fencing token;
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

import { lua } from './redis-script';

/** Acquire's arguments: owner, channel, ttlMs, bargeMs, waiter, aliveMs, mode, inbox (see ACQUIRE_SCRIPT). */
export type AcquireArgs = [owner: string, channel: string, ttlMs: number, bargeMs: number, waiter: '0' | '1', aliveMs: number, mode: 'x' | 's', inbox: string];

/**
 * Release's and leave's arguments: owner, channel, announce ("0": publish nothing on the lock's channel, where
 * nobody listens; absent or "1": announce a lock left free there, for Redlock's lines), bargeMs (0 or absent:
 * strict hand-over).
 */
export type ReleaseArgs = [owner: string, channel: string, announce?: '0' | '1', bargeMs?: number];

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
export const ACQUIRE_SCRIPT = lua<AcquireArgs, AcquireReply>(`${PRELUDE}
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
 * Release. ARGV: see ReleaseArgs. A writer drops one hold (the last frees the lock); a reader leaves. A freed
 * lock goes to the first live waiters (or, with announce, is announced free on the lock's channel when nobody
 * waits). Barging mode (bargeMs > 0), the head a writer within its window (see live_head): the lock is left
 * free, for whoever comes first, and the head is woken on its inbox ("w <owner>") so that it tries at once.
 * A head is woken once ("#woke" names it until the head changes): a head that found the lock taken again
 * checks once more when its window has passed (see waitInRedisQueue), and past the window a release hands
 * it the lock. Waking it at every release of a burst cost, measured, one futile script and one message per
 * section. Returns 1 when the lock was this owner's, 0 when it was not.
 */
export const RELEASE_SCRIPT = lua<ReleaseArgs, 0 | 1>(`${PRELUDE}
local owner, channel, announce, barge = ARGV[1], ARGV[2], ARGV[3] ~= '0', tonumber(ARGV[4] or '0') or 0
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
if barge > 0 then
  local head, w, since, woke = live_head()
  if not head then return 1 end
  if w.mode == 'x' and w.inbox ~= '' and now_ms() - since < barge then
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
 * A waiter leaves the queue (timeout, abort). ARGV: see ReleaseArgs (announce: "0" publishes nothing on the
 * lock's channel). Returns {1, token} when the lock was handed to it meanwhile (the caller then owns it and
 * must release it), {0} otherwise.
 */
export const LEAVE_QUEUE_SCRIPT = lua<ReleaseArgs, LeaveReply>(`${PRELUDE}
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
