--[[
  limit-reset: an operator's reset of one limit's current window: what it
  counted as used is forgotten, so the window holds max again; reservations
  still pending stay counted (their calls may be running).

  KEYS[1]  limit state    <prefix>:lim:<scope>:{<tag>}:<name>       (hash)
  KEYS[2]  pending        <prefix>:lim:<scope>:{<tag>}:<name>:due   (zset)
  KEYS[3]  committed      <prefix>:lim:<scope>:{<tag>}:<name>:done  (zset)
           (see includes/limit-state.lua)

  ARGV[1]  window length in ms (the definition's, as limit-reserve-3.lua takes it)
  ARGV[2]  max (the definition's)
  ARGV[3]  the limit's name
  ARGV[4]  the kind (fixed when absent), ARGV[5] a bucket's burst

  Returns { now_ms, window_start_ms, resets_at_ms, used_before, pending }
    used_before  what the window had counted as used, now 0. The records
                 committed in this window are deleted with it, so giving one
                 back later changes nothing (it no longer counts). A
                 sliding window forgets every committed unit, and a bucket
                 is full again.
  reset_ms is set to now. Keeps the keys as limit-reserve-3.lua does.
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type or the
  state does not parse; nothing written.
  Time comes only from TIME.
]]
--- @include "limit-smooth"

local s, now, corrupt = openLimitNow(KEYS[1], KEYS[2], KEYS[3], askedWindow(ARGV[4], ARGV[1], ARGV[2], ARGV[5]))
if corrupt then return corrupt end
viewWindow(KEYS[1], KEYS[3], s, now)
local before = s.used
if s.kind ~= 'fixed' then
  s.clearDone, s.tatMs, s.tatRem, s.resetsAt = true, 0, 0, now
end
local genText = intText(s.gen)
local committed = redis.call('ZRANGEBYSCORE', KEYS[3], genText, genText)
-- In slices: unpack of a very long list would overflow Lua's stack.
for from = 1, #committed, 1000 do
  local fields = {}
  for i = from, math.min(from + 999, #committed) do fields[#fields + 1] = 'r:' .. committed[i] end
  redis.call('HDEL', KEYS[1], unpack(fields))
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], genText, genText)
s.used = 0
saveLimit(KEYS[1], s, KEYS[3])
redis.call('HSET', KEYS[1], 'max', ARGV[2], 'name', ARGV[3], 'reset_ms', intText(now))
pruneCommitted(KEYS[1], KEYS[3], s)
keepLimit(KEYS[1], KEYS[2], KEYS[3], s, now)
return { now, s.start, s.resetsAt, before, s.pending }
