--[[
  reclaim: start a new attempt on an existing receipt, compare-and-set on the
  state the caller observed.

  KEYS[1]  receipt hash
  KEYS[2]  run index

  ARGV[1]  observed status: 'running' | 'failed'
  ARGV[2]  observed attempts
  ARGV[3]  lease in milliseconds
  ARGV[4]  retention in milliseconds
  ARGV[5]  owner of the new attempt

  Wins only when the receipt still has the observed status and attempts and,
  for 'running', its lease is expired by TIME and its stored effect is not
  'opaque' (an opaque effect is never taken over, whoever asks).

  Returns an observation (see claim-3.lua for its first ten fields):
  code  1  reclaimed: running, attempts + 1, new lease; error, tier,
           completed_ms and ambiguous_ms of the previous attempt are cleared,
           step:* fields are kept for the new attempt to resume from.
  code  0  not reclaimed: the observation is the current state
           (status '' when the receipt no longer exists). Nothing was written.
]]
--- @include "server-now"
--- @include "ttl"
--- @include "fenced"

local rcall = redis.call
local now = serverNow()

local receipt = readReceipt(KEYS[1])
local wins = stillAt(receipt, ARGV[1], ARGV[2]) and (receipt.status == 'failed' or
  (receipt.status == 'running' and receipt.leaseUntil <= now and receipt.effect ~= 'opaque'))
if not wins then
  return observation(0, receipt, now)
end

local lease = tonumber(ARGV[3])
local ttl = lease + tonumber(ARGV[4])
local leaseUntil = now + lease
local attempts = rcall('HINCRBY', KEYS[1], 'attempts', 1)
rcall('HSET', KEYS[1], 'status', 'running', 'lease_until_ms', leaseUntil, 'owner', ARGV[5], 'updated_ms', now)
rcall('HDEL', KEYS[1], 'error', 'tier', 'completed_ms', 'ambiguous_ms', 'resolved_ms')
keepAtLeast(KEYS[1], ttl)
rcall('ZADD', KEYS[2], 'NX', tonumber(rcall('HGET', KEYS[1], 'created_ms')) or now, KEYS[1])
keepAtLeast(KEYS[2], ttl)
return { 1, 'running', attempts, 0, lease, receipt.effect, '', '', now, leaseUntil }
