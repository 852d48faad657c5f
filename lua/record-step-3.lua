--[[
  record-step: store the outcome of one resumable sub-step, fenced on the
  caller's attempt and epoch. A later attempt that reclaims the receipt reads
  it back.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  attempt of the caller
  ARGV[2]  field name: 'step:' .. step name
  ARGV[3]  value as JSON text
  ARGV[4]  retention in milliseconds
  ARGV[5]  epoch of the caller's lifetime (from its claim)

  Returns an observation (see includes/observe-receipt.lua):
  code  1  recorded: field ARGV[2] = ARGV[3]; the TTL is kept at least
           (lease remaining + retention), which it already is unless the
           retention setting grew. A step recorded after a claim reported the
           attempt ambiguous is recorded too (the receipt stays ambiguous).
  code  0  fenced out: status is not running, or attempts or epoch differ
           (status '' when the receipt does not exist). Nothing was written.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "open-transition"

if not holdsFence(receipt, ARGV[1], ARGV[5]) then return observation(0, receipt, now) end

local _, remaining = leaseState(receipt, now)
rcall('HSET', KEYS[1], ARGV[2], ARGV[3], 'updated_ms', now)
keepCounted(KEYS[1], KEYS[2], KEYS[3], receipt, now, remaining + tonumber(ARGV[4]))
return observation(1, receipt, now)
