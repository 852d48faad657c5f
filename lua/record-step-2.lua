--[[
  record-step: store the outcome of one resumable sub-step, fenced on the
  caller's attempt. A later attempt that reclaims the receipt reads it back.

  KEYS[1]  receipt hash
  KEYS[2]  run index

  ARGV[1]  attempt of the caller
  ARGV[2]  field name: 'step:' .. step name
  ARGV[3]  value as JSON text
  ARGV[4]  retention in milliseconds

  Returns an observation (see claim-3.lua for its first ten fields):
  code  1  recorded: field ARGV[2] = ARGV[3]; the TTL is kept at least
           (lease remaining + retention), which it already is unless the
           retention setting grew.
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

local _, remaining = leaseState(receipt, now)
rcall('HSET', KEYS[1], ARGV[2], ARGV[3], 'updated_ms', now)
local ttl = remaining + tonumber(ARGV[4])
keepAtLeast(KEYS[1], ttl)
keepAtLeast(KEYS[2], ttl)
return observation(1, receipt, now)
