--[[
  reclaim: start a new attempt on an existing receipt, compare-and-set on the
  state the caller observed.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  observed status: 'running' | 'failed'
  ARGV[2]  observed attempts
  ARGV[3]  lease in milliseconds
  ARGV[4]  retention in milliseconds
  ARGV[5]  owner of the new attempt
  ARGV[6]  observed epoch
  ARGV[7]  effect the caller's claim asks for: 'resumable' | 'opaque'
  ARGV[8]  the BullMQ job of the new attempt as JSON {"queue","prefix","id"}
           ('' or absent = none), stored as field job:<new attempts>
  ARGV[9]  claim token ('' or absent = none): an unguessable token the caller
           mints per claim, stored as field claim_token, so a caller whose
           reply is lost can release exactly this attempt
           (release-lost-claim-3.lua)
  ARGV[10] '1' when a failure this very job recorded stands for it: a failed
           receipt whose job:<attempts> is ARGV[8] (not '') and whose tier is
           'neutral' or 'destructive' (a failure the job is never retried
           for: the tool may have had its effect) is not run again by a later
           delivery of that job (a retry for another of its calls, a
           redelivery after a crash); '', '0' or absent = no such rule

  Wins only when the receipt still has the observed status, attempts and
  epoch and either it failed, or it is running with a lease expired by TIME,
  no claim has flagged the attempt ambiguous, and the effect is resumable
  both as recorded and as the caller asks (effectIsOpaque in
  includes/fenced.lua). These are exactly the cases core/decision.ts answers
  execute for an existing receipt: an opaque effect is never taken over,
  whoever asks, and neither is an attempt anyone was told is ambiguous.

  Returns an observation (see includes/observe-receipt.lua):
  code  1  reclaimed: attempt + 1 started in the same lifetime (the epoch
           is kept), as every next attempt is (includes/start-attempt.lua):
           running, new lease owned by ARGV[5], started_ms = updated_ms =
           now, schema = keptSchema(receipt) (this release's layout, or the
           receipt's newer one), job:<attempt> = ARGV[8], claim_token =
           ARGV[9]; error, tier, completed_ms, ambiguous_ms, resolved_ms and
           late_heartbeat_ms of the previous attempt are cleared
           (late_settle_ms and late_settle_attempt are kept as history),
           step:* fields are kept for the new attempt to resume from; the run
           index entry is scored by created_ms.
  code  2  the failure stands (ARGV[10]): nothing was written; the reply is
           the observation followed by the recorded error text and tier.
  code  0  not reclaimed: the observation is the current state
           (status '' when the receipt no longer exists). Nothing was written.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "start-attempt"
--- @include "open-transition"

if ARGV[10] == '1' and receipt.status == 'failed' and ARGV[8] and ARGV[8] ~= '' and stillAt(receipt, ARGV[1], ARGV[2], ARGV[6]) then
  local recorded = redis.call('HMGET', KEYS[1], 'tier', 'job:' .. intText(receipt.attempts), 'error')
  if (recorded[1] == 'neutral' or recorded[1] == 'destructive') and recorded[2] == ARGV[8] then
    local reply = observation(2, receipt, now)
    reply[#reply + 1] = recorded[3] or ''
    reply[#reply + 1] = recorded[1]
    return reply
  end
end

local expired = leaseState(receipt, now)
local wins = stillAt(receipt, ARGV[1], ARGV[2], ARGV[6]) and (receipt.status == 'failed' or
  (expired == 1 and not isFlagged(receipt) and not effectIsOpaque(receipt, ARGV[7])))
if not wins then
  return observation(0, receipt, now)
end

local token = nil
if ARGV[9] and ARGV[9] ~= '' then token = { 'claim_token', ARGV[9] } end
startAttempt(KEYS[1], KEYS[2], KEYS[3], receipt, now, tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], ARGV[8], token)
return observation(1, receipt, now)
