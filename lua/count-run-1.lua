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
    n<band>    live receipts of band = effect * 3 + status (see
               includes/count-score.lua): effect resumable 0, opaque 1,
               other 2; status running 0, completed 1, failed 2.
    ambiguous  live receipts running and either reported ambiguous or opaque
               with a lapsed lease, as tally-N.lua judges them.
    oldest_ambiguous_since_ms  the earliest time one of them became
               ambiguous; -1 when none is.
  error 'TRC_CORRUPT <key>: <why>' when KEYS[1] is not a sorted set.
  Read only.
]]
--- @include "server-now"
--- @include "count-score"

local rcall = redis.call
local now = serverNow()

-- One TYPE answers both questions: is the set there, and is it a set.
local kind = rcall('TYPE', KEYS[1])['ok']
if kind == 'none' then return { now, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0 } end
if kind ~= 'zset' then return redis.error_reply('TRC_CORRUPT ' .. KEYS[1] .. ': is a ' .. kind .. ', not a zset') end

-- Band b's live entries score in (b * 1e13 + now, (b + 1) * 1e13). While now
-- has 13 digits the bounds are plain concatenations, which cost far less
-- than formatting a number per bound (this script runs once per run).
local nowText = countScore(0, now)
local function from(band)
  if #nowText ~= 13 then return '(' .. countScore(band, now) end
  if band == 0 then return '(' .. nowText end
  return '(' .. band .. nowText
end
local function to(band) return '(' .. (band + 1) .. '0000000000000' end

local reply = { now, 1, 0, -1 }
-- Bands 6 to 8 (an unknown effect) are nearly always empty: one count over all three, live or not, skips them.
local last = 8
if rcall('ZCOUNT', KEYS[1], '60000000000000', '(90000000000000') == 0 then last = 5 end
for band = 0, 8 do
  if band <= last then reply[#reply + 1] = rcall('ZCOUNT', KEYS[1], from(band), to(band)) else reply[#reply + 1] = 0 end
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
