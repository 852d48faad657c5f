--[[
  fail: settle the receipt as failed, fenced on the caller's attempt. A failed
  receipt may be claimed again: the next claim starts attempt + 1.

  KEYS[1]  receipt hash
  KEYS[2]  run index

  ARGV[1]  attempt of the caller
  ARGV[2]  error text
  ARGV[3]  failure tier ('' = none)
  ARGV[4]  retention in milliseconds

  Returns an observation (see claim-3.lua for its first ten fields):
  code  1  failed: status failed, error and tier stored, completed_ms = TIME,
           lease cleared; the receipt now expires retention ms from now.
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

local ttl = tonumber(ARGV[4])
rcall('HSET', KEYS[1], 'status', 'failed', 'error', ARGV[2], 'completed_ms', now, 'updated_ms', now)
if ARGV[3] == '' then
  rcall('HDEL', KEYS[1], 'tier', 'lease_until_ms', 'result')
else
  rcall('HSET', KEYS[1], 'tier', ARGV[3])
  rcall('HDEL', KEYS[1], 'lease_until_ms', 'result')
end
rcall('PEXPIRE', KEYS[1], ttl)
keepAtLeast(KEYS[2], ttl)
receipt.status, receipt.result, receipt.leaseUntil = 'failed', '', 0
return observation(1, receipt, now)
