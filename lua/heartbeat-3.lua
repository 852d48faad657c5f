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
--- @include "server-now"
--- @include "ttl"
--- @include "fenced"
--- @include "count"
--- @include "int-text"

local rcall = redis.call
local now = serverNow()

local receipt, refused = openFenced(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[4], now)
if refused then return refused end

local lease = tonumber(ARGV[2])
local ttl = lease + tonumber(ARGV[3])
local code = 1
receipt.leaseUntil = now + lease
-- Values as text, each formatted once (see includes/int-text.lua).
local nowText, ttlText = intText(now), intText(ttl)
if isFlagged(receipt) then
  rcall('HSET', KEYS[1], 'lease_until_ms', intText(receipt.leaseUntil), 'updated_ms', nowText, 'late_heartbeat_ms', nowText)
  code = 2
else
  rcall('HSET', KEYS[1], 'lease_until_ms', intText(receipt.leaseUntil), 'updated_ms', nowText)
end
-- The receipt's TTL as keepAtLeast left it, so the count need not read it again.
local receiptTtl = keepAtLeast(KEYS[1], ttl, ttlText)
keepRunKeyAtLeast(KEYS[2], ttl)
countReceipt(KEYS[3], KEYS[1], receipt, now, receiptTtl)
return observation(code, receipt, now)
