--[[
  heartbeat: extend the lease of the caller's attempt, fenced on that attempt
  and its epoch. Works on an expired lease too, as long as no other attempt
  took over: the worker has shown it is alive.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  attempt of the caller
  ARGV[2]  new lease in milliseconds, counted from TIME
  ARGV[3]  retention in milliseconds
  ARGV[4]  epoch of the caller's lifetime (from its claim)

  Returns an observation (see includes/observe-receipt.lua):
  code  1  extended: lease_until_ms = TIME + ARGV[2]; the receipt (and the
           run index) live at least lease + retention from now.
  code  2  extended, but contested: a claim had already reported this attempt
           ambiguous (ambiguous_ms set). The lease is extended as for code 1
           and late_heartbeat_ms = TIME records that the attempt is alive
           after the verdict. The verdict stands: the receipt stays ambiguous
           (claims keep answering ambiguous, listings keep showing it) until
           the attempt settles late or an operator resolves it.
  code  0  fenced out: status is not running, or attempts or epoch differ
           (status '' when the receipt does not exist). Nothing was written.
  error 'TRC_CORRUPT <key>: <why>', or 'TRC_VERSION <key>: …' for a receipt a
        newer release wrote (see includes/observe-receipt.lua); nothing written.
]]
--- @include "int-text"
--- @include "open-transition"

if not holdsFence(receipt, ARGV[1], ARGV[4]) then return observation(0, receipt, now) end

local lease = tonumber(ARGV[2])
local code = 1
receipt.leaseUntil = now + lease
-- Values as text, each formatted once (see includes/int-text.lua).
local nowText, leaseText = intText(now), intText(receipt.leaseUntil)
if isFlagged(receipt) then
  rcall('HSET', KEYS[1], 'lease_until_ms', leaseText, 'updated_ms', nowText, 'late_heartbeat_ms', nowText)
  code = 2
else
  rcall('HSET', KEYS[1], 'lease_until_ms', leaseText, 'updated_ms', nowText)
end
keepCounted(KEYS[1], KEYS[2], KEYS[3], receipt, now, lease + tonumber(ARGV[3]))
return observation(code, receipt, now)
