--[[
  complete: settle the receipt as completed, fenced on the caller's attempt,
  and end the tool's rejection streak in the run.

  KEYS[1]  receipt hash
  KEYS[2]  run index
  KEYS[3]  breaker hash   <prefix>:brk:{<tenant>|<run>}

  ARGV[1]  attempt of the caller
  ARGV[2]  result as JSON text ('' = no result value)
  ARGV[3]  retention in milliseconds
  ARGV[4]  breaker field holding the tool's rejection streak (<encoded tool>:rejections)

  Returns an observation (see claim-3.lua for its first ten fields):
  code  1  completed: status completed, result stored, completed_ms = TIME,
           lease cleared; the receipt now expires retention ms from now. When
           the tool's rejection streak in KEYS[3] is above 0 it is set to 0;
           otherwise KEYS[3] is not written (so never created), and no other
           breaker field is touched (a removed tool stays removed). The
           breaker hash keeps its TTL.
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

local ttl = tonumber(ARGV[3])
rcall('HSET', KEYS[1], 'status', 'completed', 'completed_ms', now, 'updated_ms', now)
if ARGV[2] == '' then
  rcall('HDEL', KEYS[1], 'result', 'lease_until_ms')
else
  rcall('HSET', KEYS[1], 'result', ARGV[2])
  rcall('HDEL', KEYS[1], 'lease_until_ms')
end
rcall('PEXPIRE', KEYS[1], ttl)
keepAtLeast(KEYS[2], ttl)
local streak = tonumber(rcall('HGET', KEYS[3], ARGV[4]))
if streak ~= nil and streak > 0 then rcall('HSET', KEYS[3], ARGV[4], 0) end
receipt.status, receipt.result, receipt.leaseUntil = 'completed', ARGV[2], 0
return observation(1, receipt, now)
