--[[
  limit-slot-acquire: take one of the k slots of an in-flight cap for a
  call, in arrival order, or keep the call's place in line. The design of
  in-flight caps is in docs/limits.md (in-flight caps: the design); this
  release does not call this script from the wrapper yet (a definition with
  `concurrency` is refused).

  KEYS[1]  cap state   <prefix>:lim:<scope>:{<tag>}:<name>          (hash: seq, cap, name, w:<receipt key>)
  KEYS[2]  holders     <prefix>:lim:<scope>:{<tag>}:<name>:held     (zset: receipt key, score = lease deadline ms)
  KEYS[3]  line        <prefix>:lim:<scope>:{<tag>}:<name>:line     (zset: receipt key, score = arrival seq)

  ARGV[1]  the receipt key of the call (one slot per call: a redelivery of
           it finds its own slot, and a holder asking again extends its lease)
  ARGV[2]  k: the cap, a whole number >= 1
  ARGV[3]  lease ms: how long a slot is held without being asked for again
  ARGV[4]  'wait' (keep the call's place in line when no slot is free for
           it) or 'refuse' (take no place)
  ARGV[5]  the job to wake when the call's turn comes (kept with its place)
  ARGV[6]  place ms: how long a place in line is kept without the call
           asking again (a job that never comes back must not block the line)
  ARGV[7]  the cap's name (kept in the state for readers)

  Returns { code, now_ms, deadline_ms, held, position, retry_at_ms }
    code 1  granted: the call holds a slot until deadline_ms = now +
            ARGV[3] (a holder asking again: its deadline moved there).
    code 0  no slot for it: held slots are k, or the calls ahead of it in
            line take the free ones. With 'wait' its place is kept (or
            taken, at the end of the line) until now + ARGV[6]; position
            is how many are ahead of it (-1 with 'refuse'). retry_at_ms: the
            earliest lease deadline of a holder (when a slot frees at the
            latest if its holder stops asking).
    held    slots held after this call.
  Holders whose lease has passed free their slots first, and places in line
  past their keep are dropped (up to 100 per call), oldest first.
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type; nothing
  written. Time comes only from TIME.
]]
--- @include "observe-receipt"
--- @include "int-text"
--- @include "server-now"
--- @include "ttl"

local bad = wrongType(KEYS[1], 'hash') or wrongType(KEYS[2], 'zset') or wrongType(KEYS[3], 'zset')
if bad then return bad end
local now = serverNow()
local receipt, cap, leaseMs = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

-- A holder whose lease passed is not running (its worker stopped asking): its slot is free.
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', intText(now))
-- A place kept past its time: its job did not come back.
local line = redis.call('ZRANGE', KEYS[3], 0, 99)
for _, waiter in ipairs(line) do
  local kept = redis.call('HGET', KEYS[1], 'w:' .. waiter)
  local untilMs = kept and tonumber(string.match(kept, '^(%d+)'))
  if not untilMs or untilMs < now then
    redis.call('ZREM', KEYS[3], waiter)
    redis.call('HDEL', KEYS[1], 'w:' .. waiter)
  end
end
redis.call('HSET', KEYS[1], 'cap', ARGV[2], 'name', ARGV[7])

local deadline = now + leaseMs
-- Kept a lease past the last deadline or place they hold.
local function keep(untilMs)
  for i = 1, 3 do keepAtLeast(KEYS[i], untilMs - now + leaseMs) end
end

if redis.call('ZSCORE', KEYS[2], receipt) then
  redis.call('ZADD', KEYS[2], intText(deadline), receipt)
  keep(deadline)
  return { 1, now, deadline, redis.call('ZCARD', KEYS[2]), 0, 0 }
end

local held = redis.call('ZCARD', KEYS[2])
local rank = redis.call('ZRANK', KEYS[3], receipt)
local ahead = rank or redis.call('ZCARD', KEYS[3])
if held < cap and ahead < cap - held then
  redis.call('ZADD', KEYS[2], intText(deadline), receipt)
  redis.call('ZREM', KEYS[3], receipt)
  redis.call('HDEL', KEYS[1], 'w:' .. receipt)
  keep(deadline)
  return { 1, now, deadline, held + 1, 0, 0 }
end

local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local retryAt = tonumber(first[2]) or now
if ARGV[4] ~= 'wait' then return { 0, now, 0, held, -1, retryAt } end
if not rank then
  redis.call('ZADD', KEYS[3], redis.call('HINCRBY', KEYS[1], 'seq', 1), receipt)
end
local placeUntil = now + tonumber(ARGV[6])
redis.call('HSET', KEYS[1], 'w:' .. receipt, intText(placeUntil) .. ' ' .. ARGV[5])
keep(math.max(placeUntil, retryAt))
return { 0, now, 0, held, ahead, retryAt }
