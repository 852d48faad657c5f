--[[
  fail: settle the receipt as failed, fenced on the caller's attempt and
  epoch. A failed receipt may be claimed again: the next claim starts
  attempt + 1 of the same lifetime.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  attempt of the caller
  ARGV[2]  error text
  ARGV[3]  failure tier ('' = none)
  ARGV[4]  retention in milliseconds
  ARGV[5]  epoch of the caller's lifetime (from its claim)

  Returns an observation (see includes/observe-receipt.lua):
  code  1  failed: status failed, error and tier stored, completed_ms = TIME,
           lease and result cleared; the receipt now expires retention ms
           from now.
  code  2  failed late: as code 1, but a claim had already reported this
           attempt ambiguous; late_settle_ms and late_settle_attempt are
           written, ambiguous_ms kept and a late.failed entry appended to the
           history (as in complete-4.lua).
  code  0  fenced out: status is not running, or attempts or epoch differ
           (status '' when the receipt does not exist). Nothing of the
           receipt's state was written; when a verdict (an operator's resolve,
           a reconcile's completed or not_started) had settled this very
           attempt of this lifetime, the refused settle is appended to the
           history as late.failed with refused = true (includes/history.lua).
  Either late path writes the history entry in this script, with the state.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "settle"
--- @include "open-transition"

if not holdsFence(receipt, ARGV[1], ARGV[5]) then
  noteRefusedSettle(KEYS[1], receipt, ARGV[1], ARGV[5], 'failed', ARGV[2], now)
  return observation(0, receipt, now)
end
local outcome = { status = 'failed', error = ARGV[2], tier = ARGV[3] }
return observation(settleReceipt(KEYS[1], KEYS[2], KEYS[3], receipt, now, tonumber(ARGV[4]), outcome), receipt, now)
