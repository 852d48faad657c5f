--[[
  claim: create a receipt for a tool call, or report the one already there,
  together with the tool's circuit-breaker state in the run.

  KEYS[1]  receipt hash   <prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>
  KEYS[2]  run index      <prefix>:run:{<tenant>|<run>}  (sorted set, score = created_ms
                          of the receipt's current lifetime)
  KEYS[3]  breaker hash   <prefix>:brk:{<tenant>|<run>}  (read only here)
  KEYS[4]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  lease in milliseconds (positive integer)
  ARGV[2]  retention in milliseconds (positive integer)
  ARGV[3]  owner: worker id of this attempt
  ARGV[4]  effect: 'resumable' | 'opaque' | 'transactional' (decided as opaque
           everywhere; a lapsed attempt is settled from its outcome row)
  ARGV[5]  tenant    ARGV[6] run    ARGV[7] tool    ARGV[8] args hash  (stored as given,
           except in layout 4, see ARGV[13])
  ARGV[9]  breaker field holding the tool's removal reason   (<encoded tool>:removed)
  ARGV[10] breaker field holding the tool's rejection streak (<encoded tool>:rejections)
  ARGV[11] epoch for a new lifetime: a fresh random token the caller mints per
           claim; stored only when this claim creates the receipt
  ARGV[12] the BullMQ job of this attempt as JSON {"queue","prefix","id"}
           ('' or absent = none), stored as field job:1
  ARGV[13] the layout a receipt this claim creates is written in: '4' for
           layout 4 (no tenant, run, tool, args_hash fields: the key names
           them), '5:<member>' (or '5') for the compact layout, <member>
           being the receipt's compact member as countMember(KEYS[1], true)
           makes it (includes/count-score.lua; given, so the claim need not
           make it), '2' or absent for layout 2 (3 for 'transactional'); a
           receipt that exists keeps its own layout
  ARGV[14] '1' when this call needs a person's approval (its tool's rule
           asked for one, see includes/approval.lua): a claim that would
           create a brand-new lifetime refuses instead (code 3), as that
           lifetime was never approved; '0', '' or absent = no approval needed

  Returns an observation followed by the breaker state:
    { code, status, attempts, lease_expired (0|1), lease_remaining_ms,
      effect, result ('' when none), ambiguous_ms ('' when unset), now_ms, lease_until_ms,
      epoch, removal, rejections }
    epoch       the lifetime's epoch: with the attempt, the fence every later
                write of this attempt carries (see includes/fenced.lua)
    removal     the tool's removal reason, '' when the tool is not removed
                (a removal stored with an empty reason reads 'removed')
    rejections  the tool's current rejection streak, 0 when unset
  code  1  created: the receipt did not exist and the tool is not removed; it
           is now running, attempt 1 of a new lifetime whose epoch is ARGV[11],
           created_ms = updated_ms = started_ms = now (layout 5 writes only
           created_ms: readers take the other two from it), schema =
           createdSchema(ARGV[4], ARGV[13]) (the layout this release writes:
           5 or 4 as ARGV[13] says, else 3 for 'transactional', else 2, see
           includes/observe-receipt.lua),
           leased until now + ARGV[1] by the server clock, and listed in KEYS[2]
           with score now (replacing the score of an earlier lifetime of the
           same call, whose entry is the same member).
  code  1  also when the receipt is approved (a person approved the call,
           see includes/approval.lua): attempt 1 starts as above, under the
           epoch ARGV[11] (the approved one is kept as approval_epoch).
  code  0  it exists: the observation describes it (whatever the breaker
           says); nothing was written.
  code  2  tool removed: no receipt exists (or it is approved) and the breaker has removed the
           tool for the run; nothing claimed, nothing written (status '').
  code  3  approval needed: no receipt exists, the tool is not removed, and
           ARGV[14] is '1' (the receipt the approval gate answered for is
           gone: it expired between the gate and this claim). Nothing
           written (status ''); the caller passes the approval gate again,
           which asks a person about a new lifetime.
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type or the
           receipt hash is malformed (see includes/observe-receipt.lua);
           nothing written.
  error 'TRC_VERSION <key>: schema <n> is newer than <m>' when a newer
           release wrote the receipt (see includes/observe-receipt.lua);
           nothing written.

  Time comes only from TIME. A new receipt lives lease + retention, so it
  cannot expire while its lease is live.
]]
--- @include "server-now"
--- @include "claim"

return claimReceipt(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV, serverNow())
