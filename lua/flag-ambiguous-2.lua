--[[
  flag-ambiguous: record that a claim found this receipt ambiguous (a running
  attempt lost its lease and its effect cannot be resumed), and keep it.

  KEYS[1]  receipt hash
  KEYS[2]  run index

  ARGV[1]  attempts the caller observed
  ARGV[2]  retention in milliseconds

  Acts only while status = running, attempts = ARGV[1] and the lease is
  expired by TIME. ambiguous_ms is set from TIME with HSETNX, so it keeps the
  first time; every call keeps the receipt (and the run index) at least
  retention ms from now, so an ambiguous call that is still being retried is
  not forgotten.

  Returns an observation (see claim-3.lua for its first ten fields), ambiguous_ms filled:
  code  1  flagged now
  code  2  already flagged earlier (ambiguous_ms unchanged)
  code  0  the state moved on (settled, reclaimed, heartbeated, or gone:
           status ''); the observation is the current state. Nothing written.
]]
--- @include "server-now"
--- @include "ttl"
--- @include "fenced"

local rcall = redis.call
local now = serverNow()

local receipt = readReceipt(KEYS[1])
if not holdsFence(receipt, ARGV[1]) or receipt.leaseUntil > now then
  return observation(0, receipt, now)
end

local code = 2
if rcall('HSETNX', KEYS[1], 'ambiguous_ms', now) == 1 then code = 1 end
local ttl = tonumber(ARGV[2])
keepAtLeast(KEYS[1], ttl)
keepAtLeast(KEYS[2], ttl)
receipt.ambiguous = rcall('HGET', KEYS[1], 'ambiguous_ms')
return observation(code, receipt, now)
