--[[
  offload-read: return a window of a stored tool result, cut on the server so
  only about the window (plus at most two checkpoint strides) crosses the wire.

  KEYS[1]  session hash   <prefix>:out:{<encoded session segment>}
           (fields as in offload-put-1.lua)

  ARGV[1]  ref
  ARGV[2]  offset in UTF-16 code units, a whole number >= 0
  ARGV[3]  limit in UTF-16 code units, a whole number >= 0, or -1 for the rest

  Returns false when the ref is unknown, else
          { total, start, stop, base, bytes }
    total  length of the text in code units
    start  offset clamped to [0, total]; stop = min(total, start + limit)
    base   code-unit position where `bytes` begins (a checkpoint <= start)
    bytes  UTF-8 from checkpoint base to a checkpoint >= stop (or the end);
           the caller slices [start - base, stop - base) out of its decoding.
  Checkpoint records in x:<ref> are 24 characters: 12 digits of code-unit
  position, 12 of byte offset, ascending; 0 and the end are implied.
]]
local rcall = redis.call
local key = KEYS[1]
local ref = ARGV[1]
local total = rcall('HGET', key, 'n:' .. ref)
if not total then return false end
total = tonumber(total)

local start = math.min(tonumber(ARGV[2]), total)
local limit = tonumber(ARGV[3])
local stop = total
if limit >= 0 then stop = math.min(total, start + limit) end
if stop <= start then return { total, start, start, start, '' } end

local index = rcall('HGET', key, 'x:' .. ref) or ''
local count = math.floor(#index / 24)
local function record(i)
  local at = (i - 1) * 24
  return tonumber(string.sub(index, at + 1, at + 12)), tonumber(string.sub(index, at + 13, at + 24))
end

-- last checkpoint at or before start
local baseChar, baseByte = 0, 0
local lo, hi = 1, count
while lo <= hi do
  local mid = math.floor((lo + hi) / 2)
  local c, b = record(mid)
  if c <= start then
    baseChar, baseByte = c, b
    lo = mid + 1
  else
    hi = mid - 1
  end
end

-- first checkpoint at or after stop; none means the end of the text
local endByte = -1
lo, hi = 1, count
while lo <= hi do
  local mid = math.floor((lo + hi) / 2)
  local c, b = record(mid)
  if c >= stop then
    endByte = b
    hi = mid - 1
  else
    lo = mid + 1
  end
end

local text = rcall('HGET', key, 'c:' .. ref)
if not text then return false end
return { total, start, stop, baseChar, string.sub(text, baseByte + 1, endByte) }
