--[[
  resolve: an operator settles an ambiguous receipt, fenced on the attempts
  the operator saw.

  KEYS[1]  receipt hash
  KEYS[2]  run index

  ARGV[1]  attempts the operator saw
  ARGV[2]  outcome: 'completed' | 'failed'
  ARGV[3]  for completed: result as JSON text ('' = no result value);
           for failed: error text
  ARGV[4]  retention in milliseconds

  A receipt is ambiguous when it is running, its lease is expired by TIME,
  and its effect is opaque or a claim flagged it (ambiguous_ms set).

  Returns an observation (see claim-3.lua for its first ten fields):
  code  1  resolved: status = ARGV[2], completed_ms = resolved_ms = TIME,
           lease cleared, expires retention ms from now. 'failed' lets the
           next claim run the call again as attempt + 1.
  code  0  fenced out: not running, or attempts differ from ARGV[1]
           (status '' when the receipt does not exist). Nothing written.
  code  3  not ambiguous: running at the seen attempts, but the lease is live,
           or the effect is resumable and nobody flagged it. Nothing written.
]]
--- @include "server-now"
--- @include "ttl"
--- @include "fenced"

local rcall = redis.call
local now = serverNow()

local receipt, fencedOut = readFenced(KEYS[1], ARGV[1], now)
if fencedOut then return fencedOut end
local expired = leaseState(receipt, now)
if expired == 0 or (receipt.effect ~= 'opaque' and receipt.ambiguous == '') then
  return observation(3, receipt, now)
end

local ttl = tonumber(ARGV[4])
rcall('HSET', KEYS[1], 'status', ARGV[2], 'completed_ms', now, 'resolved_ms', now, 'updated_ms', now)
rcall('HDEL', KEYS[1], 'lease_until_ms')
local result = ''
if ARGV[2] == 'completed' then
  if ARGV[3] ~= '' then
    rcall('HSET', KEYS[1], 'result', ARGV[3])
    result = ARGV[3]
  end
else
  rcall('HSET', KEYS[1], 'error', ARGV[3])
end
rcall('PEXPIRE', KEYS[1], ttl)
keepAtLeast(KEYS[2], ttl)
return { 1, ARGV[2], receipt.attempts, 0, 0, receipt.effect, result, receipt.ambiguous, now, 0 }
