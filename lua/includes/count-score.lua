--[[
  count-score: defines countBand(status, effect), countScore(band, ms),
  countExpiry(score) and countMember(key): the layout of a run's counting set
  (<prefix>:cnt:{<tenant>|<run>}), a sorted set with up to two members per
  receipt, named by the receipt key's part after the hash tag
  (<tool>:<argsHash>):
    <member>    score band * 1e13 + the server time the receipt expires (ms)
    ?<member>   only while the receipt is running and either reported
                ambiguous (ambiguous_ms set) or opaque: score 9 * 1e13 + the
                time it is ambiguous from (ambiguous_ms, else lease_until_ms)
  A receipt is live while its expiry is after now, and ambiguous while live
  with its ?-entry at or before now: the rule includes/observe-receipt.lua
  and tally-N.lua apply. Server times stay below 1e13 ms until the year 2286.

  countBand(status, effect)  effect * 3 + status, with effect resumable 0,
    opaque 1, anything else 2 and status running 0, completed 1, failed 2
    (so the rare bands of an unknown effect, 6 to 8, sit together); nil for
    an unknown status.
  countScore(band, ms)  the score text of `ms` in `band`, for range bounds.
    Writes format band * 1e13 + ms with intText (includes/int-text.lua):
    the same digits, exact for integers this small, and cheaper than %.0f.
  countExpiry(score)  the ms part of a score (text or number).
  countMember(key)  the member naming receipt `key`.
]]
-- If-chains, not table lookups: a table literal per call costs a claim more
-- than the compares.
local function countBand(status, effect)
  local s
  if status == 'running' then s = 0
  elseif status == 'completed' then s = 1
  elseif status == 'failed' then s = 2
  else return nil end
  if effect == 'resumable' then return s end
  if effect == 'opaque' then return 3 + s end
  return 6 + s
end

local function countScore(band, ms)
  return string.format('%.0f', band * 1e13 + ms)
end

local function countExpiry(score)
  return tonumber(score) % 1e13
end

local function countMember(key)
  -- A plain find, not a pattern: the first '}:' ends the hash tag.
  local at = string.find(key, '}:', 1, true)
  if at == nil or at + 2 > #key then return key end
  return string.sub(key, at + 2)
end
