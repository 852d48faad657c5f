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
local rcall = redis.call
local clock = rcall('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local f = rcall('HMGET', KEYS[1], 'status', 'attempts', 'lease_until_ms', 'effect', 'result', 'ambiguous_ms')
if f[1] then
  local leaseUntil = tonumber(f[3]) or 0
  local expired, remaining = 0, 0
  if f[1] == 'running' then
    if leaseUntil <= now then expired = 1 else remaining = leaseUntil - now end
  end
  local result = ''
  if f[1] == 'completed' and f[5] then result = f[5] end
  return { 0, f[1], tonumber(f[2]) or 0, expired, remaining, f[4] or '', result, f[6] or '', now, leaseUntil }
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
