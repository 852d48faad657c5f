--[[
  resolve: an operator settles an ambiguous receipt, fenced on the attempts
  (and, when given, the epoch) the operator saw.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  attempts the operator saw
  ARGV[2]  outcome: 'completed' | 'failed'
  ARGV[3]  for completed: result as JSON text ('' = no result value);
           for failed: error text
  ARGV[4]  retention in milliseconds
  ARGV[5]  epoch the operator saw, '' to fence on the attempts alone. With
           it, a verdict about one lifetime can never settle a later lifetime
           of the same call that happens to be ambiguous at the same attempt.
  ARGV[6]  who resolves (the operator's name, stored in the history; '' or
           absent = not given)
  ARGV[7]  the operator's note ('' or absent = none)

  A receipt is ambiguous when it is running and either a claim flagged the
  attempt (ambiguous_ms set; the flag sticks) or its lease is expired by TIME
  and its recorded effect is opaque. It can be resolved only once its lease
  is expired: a flagged attempt whose lease is live again has heartbeated
  after the verdict, so it is alive and may still settle late; resolving it
  then could contradict what it is doing (contested).

  Returns an observation (see includes/observe-receipt.lua):
  code  1  resolved, settled as complete-4.lua and fail-3.lua settle
           (includes/settle.lua, never as late): status = ARGV[2],
           completed_ms = resolved_ms = TIME, lease cleared, the result (or
           the error) stored, expires retention ms from now. 'failed' lets
           the next claim run the call again as attempt + 1. ambiguous_ms is
           kept.
           A resolve.<outcome> entry (who, when, which attempt, the note,
           for failed the error) is appended to the history
           (includes/history.lua), which later attempts keep.
  code  0  fenced out: not running, or attempts (or the given epoch) differ
           (status '' when the receipt does not exist). Nothing written.
  code  3  not ambiguous: running at the seen attempts, but the lease is live
           and no claim flagged it, or the effect is resumable and nobody
           flagged it. Nothing written.
  code  4  contested: flagged, but the lease is live again (the attempt
           heartbeated after the verdict and may still settle late). Nothing
           written; resolve once it settles or its lease lapses.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "settle"
--- @include "open-transition"

local epoch = ARGV[5]
if epoch == '' then epoch = receipt.epoch end
if not holdsFence(receipt, ARGV[1], epoch) then return observation(0, receipt, now) end
local expired = leaseState(receipt, now)
if expired == 0 and isFlagged(receipt) then return observation(4, receipt, now) end
if expired == 0 or (receipt.effect == 'resumable' and not isFlagged(receipt)) then
  return observation(3, receipt, now)
end

local outcome = { status = 'completed', result = ARGV[3] }
if ARGV[2] == 'failed' then outcome = { status = 'failed', error = ARGV[3] } end
settleReceipt(KEYS[1], KEYS[2], KEYS[3], receipt, now, tonumber(ARGV[4]), outcome, { 'resolved_ms', now }, {
  at = now, what = 'resolve.' .. ARGV[2], by = ARGV[6] or '', attempt = receipt.attempts,
  note = clipText(ARGV[7], 1000), error = clipText(outcome.error, 500), ambiguous_ms = tonumber(receipt.ambiguous) })
return observation(1, receipt, now)
