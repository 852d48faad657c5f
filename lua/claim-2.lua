--[[
  claim: create a receipt for a tool call, or report the one already there.

  KEYS[1]  receipt hash   <prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>
  KEYS[2]  run index      <prefix>:run:{<tenant>|<run>}  (sorted set, score = created_ms)

  ARGV[1]  lease in milliseconds (positive integer)
  ARGV[2]  retention in milliseconds (positive integer)
  ARGV[3]  owner: worker id of this attempt
  ARGV[4]  effect: 'resumable' | 'opaque'
  ARGV[5]  tenant    ARGV[6] run    ARGV[7] tool    ARGV[8] args hash  (stored as given)

  Returns an observation:
    { code, status, attempts, lease_expired (0|1), lease_remaining_ms,
      effect, result ('' when none), ambiguous_ms ('' when unset), now_ms, lease_until_ms }
  code  1  created: the receipt did not exist; it is now running, attempt 1,
           leased until now + ARGV[1] by the server clock, and listed in KEYS[2].
  code  0  it exists: the observation describes it; nothing was written.

  Time comes only from TIME. A new receipt lives lease + retention, so it
  cannot expire while its lease is live.
]]
--- @include "server-now"
--- @include "observe-receipt"

local rcall = redis.call
local now = serverNow()

local receipt = readReceipt(KEYS[1])
if receipt.status ~= '' then
  return observation(0, receipt, now)
end

local lease = tonumber(ARGV[1])
local ttl = lease + tonumber(ARGV[2])
local leaseUntil = now + lease
rcall('HSET', KEYS[1],
  'tenant', ARGV[5], 'run', ARGV[6], 'tool', ARGV[7], 'args_hash', ARGV[8],
  'status', 'running', 'attempts', 1, 'lease_until_ms', leaseUntil, 'owner', ARGV[3],
  'effect', ARGV[4], 'created_ms', now, 'updated_ms', now)
rcall('PEXPIRE', KEYS[1], ttl)
rcall('ZADD', KEYS[2], 'NX', now, KEYS[1])
local indexTtl = rcall('PTTL', KEYS[2])
if indexTtl < ttl then rcall('PEXPIRE', KEYS[2], ttl) end
return { 1, 'running', 1, 0, lease, ARGV[4], '', '', now, leaseUntil }
