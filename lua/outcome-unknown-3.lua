--[[
  outcome-unknown: the caller's attempt reports that it cannot tell whether
  its effect landed (the tool threw OutcomeUnknownError). The receipt is left
  exactly as a crash would leave it, at once: still running, its lease
  expired now by TIME, so the next claim decides as after a crash (an opaque
  call is ambiguous, a resumable one is taken over, a transactional one is
  settled from its PostgreSQL outcome row). An opaque receipt is also
  flagged ambiguous now, so it is listed for an operator at once; a
  transactional one never is (its outcome row decides, not a person).

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  attempt of the caller
  ARGV[2]  error text, kept in `error` for the operator
  ARGV[3]  retention in milliseconds
  ARGV[4]  epoch of the caller's lifetime (from its claim)

  The flag set here sticks like one set by a claim (see flag-ambiguous-3.lua):
  every later claim answers ambiguous until the receipt is settled.

  Returns an observation (see includes/observe-receipt.lua):
  code  1  done: lease_until_ms = TIME, `error` set; for an effect other than
           'resumable' and 'transactional', ambiguous_ms = TIME unless
           already set. The receipt
           (and the run index) live at least retention ms from now.
  code  0  fenced out: status is not running, or attempts or epoch differ
           (status '' when the receipt does not exist). Nothing was written.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "open-transition"

if not holdsFence(receipt, ARGV[1], ARGV[4]) then return observation(0, receipt, now) end

rcall('HSET', KEYS[1], 'lease_until_ms', now, 'error', ARGV[2], 'updated_ms', now)
receipt.leaseUntil = now
if receipt.effect ~= 'resumable' and receipt.effect ~= 'transactional' then flagAmbiguous(KEYS[1], receipt, now) end
keepCounted(KEYS[1], KEYS[2], KEYS[3], receipt, now, tonumber(ARGV[3]))
return observation(1, receipt, now)
