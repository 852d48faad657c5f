--[[
  heartbeat: extend the lease of the caller's attempt, fenced on that attempt.
  Works on an expired lease too, as long as no other attempt took over: the
  worker has shown it is alive.

  KEYS[1]  receipt hash
  KEYS[2]  run index

  ARGV[1]  attempt of the caller
  ARGV[2]  new lease in milliseconds, counted from TIME
  ARGV[3]  retention in milliseconds

  Returns an observation (see claim-3.lua for its first ten fields):
  code  1  extended: lease_until_ms = TIME + ARGV[2]; the receipt (and the
           run index) live at least lease + retention from now.
  code  0  fenced out: status is not running or attempts differ from ARGV[1]
           (status '' when the receipt does not exist). Nothing was written.
]]
--- @include "server-now"
--- @include "ttl"
--- @include "fenced"

local rcall = redis.call
local now = serverNow()

local receipt, fencedOut = readFenced(KEYS[1], ARGV[1], now)
if fencedOut then return fencedOut end

local lease = tonumber(ARGV[2])
local ttl = lease + tonumber(ARGV[3])
local leaseUntil = now + lease
rcall('HSET', KEYS[1], 'lease_until_ms', leaseUntil, 'updated_ms', now)
keepAtLeast(KEYS[1], ttl)
keepAtLeast(KEYS[2], ttl)
return { 1, 'running', receipt.attempts, 0, lease, receipt.effect, '', receipt.ambiguous, now, leaseUntil }
