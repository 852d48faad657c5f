--[[
  count-score: defines countBand(status, effect), countScore(band, ms),
  countExpiry(score), countMember(key, compact) and indexMember(key,
  compact): the layout of a run's counting set
  (<prefix>:cnt:{<tenant>|<run>}), a sorted set with up to two members per
  receipt, named by the receipt key's part after the hash tag
  (<tool>:<argsHash>), or by its compact member for a receipt of the compact
  layout (see countMember):
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
  countMember(key, compact)  the member naming receipt `key` in the
    counting set: its part after the hash tag; with `compact` true (a
    receipt of the compact layout, 5) its compact member, the same part with
    an args hash of 64 lowercase hex digits written as the 43 base64url
    characters of its 32 bytes after '=' in place of ':'
    (<tool>=<base64url>), so that with a tool name of up to 20 encoded
    characters it stays within the server's default zset-max-listpack-value
    (64 bytes) and the set stays a listpack. A digest of another shape keeps
    its part as it is. src/redis/keys.ts holds the same rule (callMember),
    src/redis/key-parts.ts its inverse (callPartOfMember);
    test/redis/compact-members.test.ts checks they agree.
  indexMember(key, compact)  the member naming receipt `key` in the run
    index: the whole key, or with `compact` true countMember(key, true).
  hexToBase64url(hex)  64 hex digits as the 43 characters of their 32 bytes
    in BASE64URL, the base64url alphabet (unpadded).
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

local BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

-- 24 bits (6 digits, 4 characters) at a time, then the last 16 bits as 3 characters.
local function hexToBase64url(hex)
  local byte, sub, char, floor = string.byte, string.sub, string.char, math.floor
  local out = {}
  for i = 1, 55, 6 do
    local v = tonumber(sub(hex, i, i + 5), 16)
    out[#out + 1] = char(byte(BASE64URL, floor(v / 262144) + 1), byte(BASE64URL, floor(v / 4096) % 64 + 1),
      byte(BASE64URL, floor(v / 64) % 64 + 1), byte(BASE64URL, v % 64 + 1))
  end
  local v = tonumber(sub(hex, 61, 64), 16) * 4
  out[#out + 1] = char(byte(BASE64URL, floor(v / 4096) + 1), byte(BASE64URL, floor(v / 64) % 64 + 1), byte(BASE64URL, v % 64 + 1))
  return table.concat(out)
end

local function countMember(key, compact)
  -- A plain find, not a pattern: the first '}:' ends the hash tag.
  local at = string.find(key, '}:', 1, true)
  if at == nil or at + 2 > #key then return key end
  local part = string.sub(key, at + 2)
  if not compact then return part end
  -- The tool part holds no ':' (it is percent-encoded), so the first one ends it.
  local colon = string.find(part, ':', 1, true)
  if colon == nil or #part - colon ~= 64 or string.find(part, '[^0-9a-f]', colon + 1) then return part end
  return string.sub(part, 1, colon - 1) .. '=' .. hexToBase64url(string.sub(part, colon + 1))
end

local function indexMember(key, compact)
  if compact then return countMember(key, true) end
  return key
end
