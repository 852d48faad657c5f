--[[
  claim: create a receipt for a tool call, or report the one already there,
  together with the tool's circuit-breaker state in the run.

  KEYS[1]  receipt hash   <prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>
  KEYS[2]  run index      <prefix>:run:{<tenant>|<run>}  (sorted set, score = created_ms
                          of the receipt's current lifetime)
  KEYS[3]  breaker hash   <prefix>:brk:{<tenant>|<run>}  (read only here)
  KEYS[4]  counting set   <prefix>:cnt:{<tenant>|<run>}  (see includes/count.lua)

  ARGV[1]  lease in milliseconds (positive integer)
  ARGV[2]  retention in milliseconds (positive integer)
  ARGV[3]  owner: worker id of this attempt
  ARGV[4]  effect: 'resumable' | 'opaque'
  ARGV[5]  tenant    ARGV[6] run    ARGV[7] tool    ARGV[8] args hash  (stored as given)
  ARGV[9]  breaker field holding the tool's removal reason   (<encoded tool>:removed)
  ARGV[10] breaker field holding the tool's rejection streak (<encoded tool>:rejections)
  ARGV[11] epoch for a new lifetime: a fresh random token the caller mints per
           claim; stored only when this claim creates the receipt
  ARGV[12] the BullMQ job of this attempt as JSON {"queue","prefix","id"}
           ('' or absent = none), stored as field job:1

  Returns an observation followed by the breaker state:
    { code, status, attempts, lease_expired (0|1), lease_remaining_ms,
      effect, result ('' when none), ambiguous_ms ('' when unset), now_ms, lease_until_ms,
      epoch, removal, rejections }
    epoch       the lifetime's epoch: with the attempt, the fence every later
                write of this attempt carries (see includes/fenced.lua)
    removal     the tool's removal reason, '' when the tool is not removed
                (a removal stored with an empty reason reads 'removed')
    rejections  the tool's current rejection streak, 0 when unset
  code  1  created: the receipt did not exist and the tool is not removed; it
           is now running, attempt 1 of a new lifetime whose epoch is ARGV[11],
           started_ms = now, leased until now + ARGV[1] by the
           server clock, and listed in KEYS[2]
           with score now (replacing the score of an earlier lifetime of the
           same call, whose entry is the same member).
  code  0  it exists: the observation describes it (whatever the breaker
           says); nothing was written.
  code  2  tool removed: no receipt exists and the breaker has removed the
           tool for the run; nothing claimed, nothing written (status '').
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type or the
           receipt hash is malformed (see includes/observe-receipt.lua);
           nothing written.

  Time comes only from TIME. A new receipt lives lease + retention, so it
  cannot expire while its lease is live.
]]
--- @include "server-now"
--- @include "ttl"
--- @include "observe-receipt"
--- @include "count"

local rcall = redis.call
local now = serverNow()

local receipt, corrupt = openReceipt(KEYS[1], KEYS[2], KEYS[4])
corrupt = corrupt or wrongType(KEYS[3], 'hash')
if corrupt then return corrupt end
local breaker = rcall('HMGET', KEYS[3], ARGV[9], ARGV[10])
local removal = breaker[1] or ''
if breaker[1] and removal == '' then removal = 'removed' end
local rejections = tonumber(breaker[2]) or 0

local function withBreaker(reply)
  reply[#reply + 1] = removal
  reply[#reply + 1] = rejections
  return reply
end

if receipt.status ~= '' then
  return withBreaker(observation(0, receipt, now))
end
if removal ~= '' then
  return withBreaker(observation(2, receipt, now))
end

local lease = tonumber(ARGV[1])
local ttl = lease + tonumber(ARGV[2])
local leaseUntil = now + lease
rcall('HSET', KEYS[1],
  'tenant', ARGV[5], 'run', ARGV[6], 'tool', ARGV[7], 'args_hash', ARGV[8],
  'status', 'running', 'attempts', 1, 'lease_until_ms', leaseUntil, 'owner', ARGV[3],
  'effect', ARGV[4], 'created_ms', now, 'updated_ms', now, 'epoch', ARGV[11], 'started_ms', now)
if ARGV[12] and ARGV[12] ~= '' then rcall('HSET', KEYS[1], 'job:1', ARGV[12]) end
rcall('PEXPIRE', KEYS[1], ttl)
rcall('ZADD', KEYS[2], now, KEYS[1])
keepAtLeast(KEYS[2], ttl)
countReceipt(KEYS[4], KEYS[1], { status = 'running', effect = ARGV[4], leaseUntil = leaseUntil, ambiguous = '' }, now)
return { 1, 'running', 1, 0, lease, ARGV[4], '', '', now, leaseUntil, ARGV[11], removal, rejections }
