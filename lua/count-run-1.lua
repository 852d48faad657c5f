--[[
  count-run: a run's live receipts by status and effect, and its ambiguous
  ones, read from its counting set (see includes/count.lua) without reading
  a receipt.

  KEYS[1]  counting set   <prefix>:cnt:{<tenant>|<run>}

  ARGV  none.

  Returns { now_ms, exists (0|1), ambiguous, oldest_ambiguous_since_ms,
            n0, n1, ..., n8 }
    exists     0 when the counting set does not exist (every receipt of the
               run expired, or none was ever counted); the counts are then 0.
    n<band>    live receipts of band = status * 3 + effect, status running 0,
               completed 1, failed 2; effect resumable 0, opaque 1, other 2.
    ambiguous  live receipts running and either reported ambiguous or opaque
               with a lapsed lease, as tally-N.lua judges them.
    oldest_ambiguous_since_ms  the earliest time one of them became
               ambiguous; -1 when none is.
  Read only.
]]
--- @include "server-now"
--- @include "ttl"
--- @include "observe-receipt"
--- @include "count"

local rcall = redis.call
local now = serverNow()

-- One TYPE answers both questions: is the set there, and is it a set.
local kind = rcall('TYPE', KEYS[1])['ok']
if kind == 'none' then return { now, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0 } end
if kind ~= 'zset' then return corruptReply(KEYS[1], 'is a ' .. kind .. ', not a zset') end

local reply = { now, 1, 0, -1 }
for band = 0, 8 do
  reply[#reply + 1] = rcall('ZCOUNT', KEYS[1], '(' .. countScore(band, now), '(' .. countScore(band + 1, 0))
end

-- Receipts possibly ambiguous by now; each counts while the receipt itself is live.
local flagged = rcall('ZRANGEBYSCORE', KEYS[1], countScore(9, 0), countScore(9, now), 'WITHSCORES')
for i = 1, #flagged, 2 do
  local score = rcall('ZSCORE', KEYS[1], string.sub(flagged[i], 2))
  if score and countExpiry(score) > now then
    local since = countExpiry(flagged[i + 1])
    reply[3] = reply[3] + 1
    if reply[4] < 0 or since < reply[4] then reply[4] = since end
  end
end
return reply
