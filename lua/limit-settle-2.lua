--[[
  limit-settle: decide, on the run's side, what becomes of a reservation
  that will not be bound by its holder: one still pending past its deadline
  (its claim never came), or one a delivery holds after a claim that did not
  execute (a replay, a wait, an ambiguous call, a removed tool). Bound (an
  attempt ran under it: commit it) or not (revoke it here, so no claim can
  bind it later: give it back). Correct without comparing the clocks of two
  nodes: the run's slot decides once, and a bind (limit-bind-2.lua) asks the
  same hash.

  KEYS[1]  bindings hash   <prefix>:lbd:{<tenant>|<run>}  (see includes/limit-bindings.lua)
  KEYS[2]  receipt hash    the receipt the reservation is for (same hash tag)

  ARGV[1]  reservation id
  ARGV[2]  keep ms: the least time the hash is kept afterwards
  ARGV[3]  the receipt field of the limit: limit:<name>

  A reservation neither bound nor revoked is bound here, not revoked, when
  the receipt has a running attempt that no reservation of this limit
  counts (its field ARGV[3] empty): that attempt was claimed under it and its
  worker died (or is slow) before its bind. A receipt's reservation is one
  per call (a redelivery reuses it), so it is this one; and whether the
  attempt got as far as its effect is not known here, so it is counted, as
  every call that may have run is. Its own late bind answers bound (the
  attempt it was bound for is kept beside it, ARGV[3]:attempt).

  A reservation the receipt's field ARGV[3] names is bound even when the
  bindings hash no longer says so (it expired while the attempt ran): the
  entry is written again.

  Returns { code, receipt_key }
    code 1  bound to receipt_key (already, or here): the caller commits it
            (limit-commit-3.lua).
    code 0  revoked by this settle: it was neither bound nor revoked, and
            no running attempt needs it; now it can never be bound. The
            caller gives it back (limit-release-3.lua).
    code 2  revoked already (by a settle, a bind or a give-back); nothing
            written. The caller gives it back (a second give-back is a no-op).
    receipt_key is '' unless code is 1.
  error 'TRC_CORRUPT <key>: <why>' when KEYS[1] is not a hash; nothing written.
]]
--- @include "observe-receipt"
--- @include "limit-bindings"
--- @include "int-text"

local corrupt = wrongType(KEYS[1], 'hash')
if corrupt then return corrupt end
local value = redis.call('HGET', KEYS[1], ARGV[1])
if value == revokedMark() then return { 2, '' } end
if value then return { 1, value } end
local holder = redis.call('HGET', KEYS[2], ARGV[3])
-- The receipt names it: bound, though the entry that said so is gone (an attempt that ran longer than the
-- bindings hash is kept, a sliding window's or a bucket's share pending until it ends). Said so again.
if holder == ARGV[1] then
  redis.call('HSET', KEYS[1], ARGV[1], KEYS[2])
  keepBindings(KEYS[1], ARGV[2])
  return { 1, KEYS[2] }
end
-- Read, not opened: a receipt awaiting approval (or of any other state) simply has no running attempt.
local receipt = readReceipt(KEYS[2])
if receipt.status == 'running' and not holder then
  redis.call('HSET', KEYS[2], ARGV[3], ARGV[1], bindingAttemptField(ARGV[3]), intText(receipt.attempts))
  redis.call('HSET', KEYS[1], ARGV[1], KEYS[2])
  keepBindings(KEYS[1], ARGV[2])
  return { 1, KEYS[2] }
end
redis.call('HSET', KEYS[1], ARGV[1], revokedMark())
keepBindings(KEYS[1], ARGV[2])
return { 0, '' }
