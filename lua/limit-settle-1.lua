--[[
  limit-settle: decide, on the run's side, what became of a reservation
  still pending past its deadline: bound (an attempt ran under it: commit
  it) or not (revoke it here, so no claim can bind it later: give it back).
  Correct without comparing the clocks of two nodes: the run's slot decides
  once, and a bind (limit-bind-2.lua) asks the same hash.

  KEYS[1]  bindings hash   <prefix>:lbd:{<tenant>|<run>}  (see includes/limit-bindings.lua)

  ARGV[1]  reservation id
  ARGV[2]  keep ms: the least time the hash is kept afterwards

  Returns { code, receipt_key }
    code 1  bound to receipt_key: the caller commits it (limit-commit-3.lua).
    code 0  revoked by this settle: it was neither bound nor revoked; now it
            can never be bound. The caller gives it back (limit-release-3.lua).
    code 2  revoked already (by a settle, a bind or a give-back); nothing
            written. The caller gives it back (a second give-back is a no-op).
    receipt_key is '' unless code is 1.
  error 'TRC_CORRUPT <key>: <why>' when KEYS[1] is not a hash; nothing written.
]]
--- @include "observe-receipt"
--- @include "limit-bindings"

local corrupt = wrongType(KEYS[1], 'hash')
if corrupt then return corrupt end
local value = redis.call('HGET', KEYS[1], ARGV[1])
if value == revokedMark() then return { 2, '' } end
if value then return { 1, value } end
redis.call('HSET', KEYS[1], ARGV[1], revokedMark())
keepBindings(KEYS[1], ARGV[2])
return { 0, '' }
