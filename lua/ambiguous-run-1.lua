--[[
  ambiguous-run: the receipts of one run that need a person, read from its
  counting set (see includes/count-score.lua) without reading a receipt:
  each ?-entry whose time has come (ambiguous since at or before now) and
  whose receipt is still live (its own entry's expiry after now), the rule
  count-run-1.lua counts by.

  KEYS[1]  counting set   <prefix>:cnt:{<tenant>|<run>}

  ARGV  none.

  Returns { now_ms, member1, since1, member2, since2, ... }
    member  the receipt key's part after the hash tag (<tool>:<argsHash>)
    since   when it became ambiguous (ms, server clock)
  error 'TRC_CORRUPT <key>: <why>' when KEYS[1] is neither missing nor a
  sorted set. Read only.
]]
--- @include "server-now"
--- @include "count-score"

local rcall = redis.call
local now = serverNow()
local kind = rcall('TYPE', KEYS[1])['ok']
if kind == 'none' then return { now } end
if kind ~= 'zset' then return redis.error_reply('TRC_CORRUPT ' .. KEYS[1] .. ': is a ' .. kind .. ', not a zset') end

local reply = { now }
local flagged = rcall('ZRANGEBYSCORE', KEYS[1], countScore(9, 0), countScore(9, now), 'WITHSCORES')
for i = 1, #flagged, 2 do
  local member = string.sub(flagged[i], 2)
  local score = rcall('ZSCORE', KEYS[1], member)
  if score and countExpiry(score) > now then
    reply[#reply + 1] = member
    reply[#reply + 1] = countExpiry(flagged[i + 1])
  end
end
return reply
