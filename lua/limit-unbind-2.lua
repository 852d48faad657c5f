--[[
  limit-unbind: take a bound reservation off the receipt whose attempt
  turned out never to have started, and revoke it, so the caller can give
  it back (limit-release-3.lua) and the next attempt is counted anew.

  KEYS[1]  receipt hash    <prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>
  KEYS[2]  bindings hash   <prefix>:lbd:{<tenant>|<run>}  (see includes/limit-bindings.lua)

  ARGV[1]  reservation id
  ARGV[2]  the receipt field of the limit: limit:<name>
  ARGV[3]  keep ms: the least time the bindings hash is kept afterwards
  ARGV[4]  optional: the attempt whose share it is, and ARGV[5] its
           lifetime's epoch. When given (not ''), a receipt that exists and
           has moved on (another attempt started since, say a redelivery's
           takeover of the failed attempt, or another lifetime) keeps its
           binding: that attempt is counted by it. So does a binding of
           this id made for another attempt (an earlier one, whose
           execution it counts) or by a release that recorded none.

  Returns { code }
    code 1  it was bound to this receipt: the field (and the attempt
            beside it, ARGV[2]:attempt) is deleted and the id revoked.
    code 0  it was not bound to this receipt (never, or given back
            already): the id is revoked (if it was not), nothing else written.
  On 1 or 0 the caller gives it back; a settle that asks later finds it
  revoked.
    code 2  the receipt moved on past the attempt ARGV[4] names, or the id
            is bound for another attempt: nothing written, and the caller
            does not give it back.
  error 'TRC_CORRUPT <key>: <why>' when the receipt is malformed or a key
  has the wrong type; 'TRC_VERSION ...' for a receipt of a newer layout;
  nothing written.
]]
--- @include "observe-receipt"
--- @include "limit-bindings"

local receipt, corrupt = openReceiptHash(KEYS[1])
if corrupt then return corrupt end
corrupt = wrongType(KEYS[2], 'hash')
if corrupt then return corrupt end

local id, field = ARGV[1], ARGV[2]
local bound = redis.call('HGET', KEYS[1], field) == id
if ARGV[4] and ARGV[4] ~= '' and receipt.status ~= '' then
  if receipt.attempts ~= tonumber(ARGV[4]) or receipt.epoch ~= ARGV[5] then return { 2 } end
  if bound and redis.call('HGET', KEYS[1], bindingAttemptField(field)) ~= ARGV[4] then return { 2 } end
end
local code = 0
if bound then
  redis.call('HDEL', KEYS[1], field, bindingAttemptField(field))
  code = 1
end
if redis.call('HGET', KEYS[2], id) ~= revokedMark() then
  redis.call('HSET', KEYS[2], id, revokedMark())
  keepBindings(KEYS[2], ARGV[3])
end
return { code }
