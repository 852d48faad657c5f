--[[
  limit-unbind: take a bound reservation off the receipt whose attempt
  turned out never to have started, and revoke it, so the caller can give
  it back (limit-release-3.lua) and the next attempt is counted anew.

  KEYS[1]  receipt hash    <prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>
  KEYS[2]  bindings hash   <prefix>:lbd:{<tenant>|<run>}  (see includes/limit-bindings.lua)

  ARGV[1]  reservation id
  ARGV[2]  the receipt field of the limit: limit:<name>
  ARGV[3]  keep ms: the least time the bindings hash is kept afterwards

  Returns { code }
    code 1  it was bound to this receipt: the field is deleted and the id
            revoked.
    code 0  it was not bound to this receipt (never, or given back
            already): the id is revoked (if it was not), nothing else written.
  Either way the caller gives it back; a settle that asks later finds it
  revoked.
  error 'TRC_CORRUPT <key>: <why>' when the receipt is malformed or a key
  has the wrong type; 'TRC_VERSION ...' for a receipt of a newer layout;
  nothing written.
]]
--- @include "observe-receipt"
--- @include "limit-bindings"

local _, corrupt = openReceiptHash(KEYS[1])
if corrupt then return corrupt end
corrupt = wrongType(KEYS[2], 'hash')
if corrupt then return corrupt end

local id, field = ARGV[1], ARGV[2]
local code = 0
if redis.call('HGET', KEYS[1], field) == id then
  redis.call('HDEL', KEYS[1], field)
  code = 1
end
if redis.call('HGET', KEYS[2], id) ~= revokedMark() then
  redis.call('HSET', KEYS[2], id, revokedMark())
  keepBindings(KEYS[2], ARGV[3])
end
return { code }
