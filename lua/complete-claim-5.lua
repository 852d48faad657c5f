--[[
  complete-claim: settle one call's receipt as completed (exactly as
  complete-4.lua) and, once it is settled, claim the next call of the same
  turn (exactly as claim-4.lua), in one round trip. Both calls belong to one
  run, so every key shares its hash tag; the claim sees what the complete
  wrote (a reset rejection streak, and the settled receipt itself when both
  calls are the same call).

  KEYS[1]  receipt hash of the call to complete
  KEYS[2]  run index      <prefix>:run:{<tenant>|<run>}
  KEYS[3]  breaker hash   <prefix>:brk:{<tenant>|<run>}
  KEYS[4]  receipt hash of the next call, to claim (may equal KEYS[1])
  KEYS[5]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]..ARGV[5]   the complete's arguments, as complete-4.lua's ARGV[1..5]
               (attempt, result text, retention, rejections field, epoch)
  ARGV[6]..ARGV[18]  the next call's claim arguments, as claim-4.lua's ARGV[1..13]
               (lease, retention, owner, effect, tenant, run, tool, args hash,
               removal field, rejections field, epoch, job, layout)

  Returns { settle, claim }:
    settle  complete-4.lua's observation: code 1 completed, 2 completed
            late, 0 fenced out (see complete-4.lua)
    claim   claim-4.lua's reply for the next call (codes 0, 1, 2), or an
            empty array when nothing was claimed: the complete did not settle
            (code 0), or the next call's keys are corrupt or its receipt was
            written by a newer release (then the claim wrote nothing, and the
            caller claims on its own to learn why)
  error 'TRC_CORRUPT <key>: <why>' when the receipt to complete or a shared
           key is corrupt, 'TRC_VERSION <key>: …' when a newer release wrote
           the receipt to complete (see includes/observe-receipt.lua); nothing written.
]]
--- @include "server-now"
--- @include "complete-claim"

return completeThenClaim(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV, serverNow())
