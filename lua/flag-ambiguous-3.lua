--[[
  flag-ambiguous: record that a claim found this receipt ambiguous (a running
  attempt lost its lease and its effect cannot be resumed), and keep it.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  attempts the caller observed
  ARGV[2]  retention in milliseconds
  ARGV[3]  epoch the caller observed
  ARGV[4]  effect the caller's claim asks for: 'resumable' | 'opaque'

  Acts only while status = running at attempts ARGV[1] of epoch ARGV[3], and
  either the attempt is already flagged, or its lease is expired by TIME and
  the effect is opaque (the receipt's recorded effect, or the caller's: see
  effectIsOpaque in includes/fenced.lua). These are exactly the cases
  core/decision.ts answers ambiguous. ambiguous_ms is set from TIME with
  HSETNX, so it keeps the first time; every call keeps the receipt (and the
  run index) at least retention ms from now, so an ambiguous call that is
  still being retried is not forgotten.

  Once set, the flag sticks for the attempt: a later claim answers ambiguous
  whatever effect it asks for and whatever the lease says (a late heartbeat
  of the attempt extends the lease but not the verdict), and reclaim-3.lua
  refuses to take the attempt over. Only a settle clears the state: the
  attempt completing or failing late, or an operator's resolve.

  Returns an observation (see includes/observe-receipt.lua), ambiguous_ms filled:
  code  1  flagged now
  code  2  already flagged earlier (ambiguous_ms unchanged)
  code  0  the state moved on (settled, reclaimed, heartbeated before any
           flag, another lifetime, or gone: status ''); the observation is the
           current state. Nothing written.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "open-transition"

local expired = leaseState(receipt, now)
local ambiguous = isFlagged(receipt) or (expired == 1 and effectIsOpaque(receipt, ARGV[4]))
if not holdsFence(receipt, ARGV[1], ARGV[3]) or not ambiguous then
  return observation(0, receipt, now)
end

local code = 2
if flagAmbiguous(KEYS[1], receipt, now) then code = 1 end
keepCounted(KEYS[1], KEYS[2], KEYS[3], receipt, now, tonumber(ARGV[2]))
return observation(code, receipt, now)
