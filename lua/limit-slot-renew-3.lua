--[[
  limit-slot-renew: extend the lease of a slot of an in-flight cap its
  holder still holds (sent with the attempt's heartbeats). The keys are laid
  out in includes/limit-slots.lua.

  KEYS[1]  cap state   <prefix>:lim:<scope>:{<tag>}:<name>          (hash)
  KEYS[2]  holders     <prefix>:lim:<scope>:{<tag>}:<name>:held     (zset)
  KEYS[3]  line        <prefix>:lim:<scope>:{<tag>}:<name>:line     (zset)

  ARGV[1]  the receipt key of the call
  ARGV[2]  the holder's token
  ARGV[3]  lease ms

  Returns { code, now_ms, deadline_ms }
    code 1  renewed until deadline_ms = now + ARGV[3]
    code 0  not held: its lease passed (the slot may be another's now), or
            another delivery of the call adopted it; nothing written.
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type.
  Time comes only from TIME.
]]
--- @include "limit-slots"
--- @include "server-now"

local bad = slotKeysCorrupt(KEYS[1], KEYS[2], KEYS[3])
if bad then return bad end
local now = serverNow()
local receipt, leaseMs = ARGV[1], tonumber(ARGV[3])
local score = tonumber(redis.call('ZSCORE', KEYS[2], receipt))
if not score or score <= now or redis.call('HGET', KEYS[1], 'h:' .. receipt) ~= ARGV[2] then return { 0, now, 0 } end
local deadline = now + leaseMs
redis.call('ZADD', KEYS[2], intText(deadline), receipt)
keepSlots(KEYS[1], KEYS[2], KEYS[3], now, deadline, leaseMs)
return { 1, now, deadline }
