--[[
  limit-bind: record a granted reservation on the attempt it pays for, on
  the run's side, unless it was revoked. The claim that starts the attempt
  does the same; this script is that step alone.

  KEYS[1]  receipt hash    <prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>
  KEYS[2]  bindings hash   <prefix>:lbd:{<tenant>|<run>}  (see includes/limit-bindings.lua)

  ARGV[1]  reservation id
  ARGV[2]  the receipt field of the limit: limit:<name>
  ARGV[3]  keep ms: the least time the bindings hash is kept afterwards

  Returns { code, holder }
    code 1  bound: the receipt's field ARGV[2] holds the id, and the
            bindings hash maps it to KEYS[1] (a second bind of the same id
            answers 1 again and writes nothing new).
    code 0  revoked: a settle (or an earlier bind or give-back) revoked it;
            nothing written. The attempt must not run under it.
    code 2  counted already: the receipt's field holds another reservation
            (holder), bound by an earlier attempt of this lifetime (a
            takeover is the same execution). This id is revoked; the caller
            gives it back, and the attempt runs counted once.
    code 3  no running attempt: the receipt does not exist or is not
            running; nothing written. The caller gives it back.
    holder is '' unless code is 2.
  error 'TRC_CORRUPT <key>: <why>' when the receipt is malformed, a key
  has the wrong type, or the id is bound to another receipt (ids are
  random: only a hand edit does that); 'TRC_VERSION ...' for a receipt of a
  newer layout (see includes/observe-receipt.lua); nothing written.
]]
--- @include "observe-receipt"
--- @include "limit-bindings"

local receipt, corrupt = openReceiptHash(KEYS[1])
if corrupt then return corrupt end
corrupt = wrongType(KEYS[2], 'hash')
if corrupt then return corrupt end

local id, field = ARGV[1], ARGV[2]
local value = redis.call('HGET', KEYS[2], id)
if value == revokedMark() then return { 0, '' } end
if value == KEYS[1] then return { 1, '' } end
if value then return redis.error_reply('TRC_CORRUPT ' .. KEYS[2] .. ': reservation ' .. id .. ' is bound to another receipt') end
if receipt.status ~= 'running' then return { 3, '' } end

local holder = redis.call('HGET', KEYS[1], field)
if holder and holder ~= id then
  redis.call('HSET', KEYS[2], id, revokedMark())
  keepBindings(KEYS[2], ARGV[3])
  return { 2, holder }
end
redis.call('HSET', KEYS[1], field, id)
redis.call('HSET', KEYS[2], id, KEYS[1])
keepBindings(KEYS[2], ARGV[3])
return { 1, '' }
