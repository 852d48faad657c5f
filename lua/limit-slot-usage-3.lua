--[[
  limit-slot-usage: read an in-flight cap on the server clock: its k, the
  slots held by live leases, the places in line, and when the earliest
  lease passes. Read only. The keys are laid out in includes/limit-slots.lua.

  KEYS[1]  cap state   <prefix>:lim:<scope>:{<tag>}:<name>          (hash)
  KEYS[2]  holders     <prefix>:lim:<scope>:{<tag>}:<name>:held     (zset)
  KEYS[3]  line        <prefix>:lim:<scope>:{<tag>}:<name>:line     (zset)

  ARGV  none

  Returns { now_ms, cap, held, waiting, next_lapse_ms }
    cap      the k the cap was last asked with (0 when never)
    held     slots whose lease has not passed
    waiting  places in line, those kept past their time included until a
             write drops them
    next_lapse_ms  the earliest live lease deadline, -1 when none is held
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type.
  Time comes only from TIME.
]]
--- @include "limit-slots"
--- @include "server-now"

local bad = slotKeysCorrupt(KEYS[1], KEYS[2], KEYS[3])
if bad then return bad end
local now = serverNow()
local held = redis.call('ZCOUNT', KEYS[2], '(' .. intText(now), '+inf')
local first = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. intText(now), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local cap = tonumber(redis.call('HGET', KEYS[1], 'cap')) or 0
return { now, cap, held, redis.call('ZCARD', KEYS[3]), tonumber(first[2]) or -1 }
