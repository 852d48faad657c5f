--[[
  complete: settle the receipt as completed, fenced on the caller's attempt
  and epoch, and end the tool's rejection streak in the run.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  breaker hash   <prefix>:brk:{<tenant>|<run>}
  KEYS[4]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  attempt of the caller
  ARGV[2]  result as JSON text ('' = no result value)
  ARGV[3]  retention in milliseconds
  ARGV[4]  breaker field holding the tool's rejection streak (<encoded tool>:rejections)
  ARGV[5]  epoch of the caller's lifetime (from its claim)

  Returns an observation (see includes/observe-receipt.lua):
  code  1  completed: status completed, result stored, completed_ms = TIME,
           lease cleared; the receipt now expires retention ms from now. When
           the tool's rejection streak in KEYS[3] is above 0 it is set to 0;
           otherwise KEYS[3] is not written (so never created), and no other
           breaker field is touched (a removed tool stays removed). The
           breaker hash keeps its TTL.
  code  2  completed late: as code 1, but a claim had already reported this
           attempt ambiguous (ambiguous_ms set). The attempt knows its outcome,
           so its settle stands; late_settle_ms = TIME and
           late_settle_attempt = the attempt record that it came late,
           ambiguous_ms is kept, so an operator can see both, and a
           late.completed entry is appended to the history
           (includes/history.lua).
  code  0  fenced out: status is not running, or attempts or epoch differ
           from ARGV[1] / ARGV[5] (status '' when the receipt does not exist).
           Nothing of the receipt's state was written; when a verdict (an
           operator's resolve, a reconcile's completed or not_started) had
           settled this very attempt of this lifetime, the refused complete is
           appended to the history as late.completed with refused = true.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "server-now"
--- @include "complete"

return (completeReceipt(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV, serverNow()))
