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

  Returns an observation (see claim-2.lua for its shape):
  code  1  reclaimed: running, attempts + 1, new lease; error, tier,
           completed_ms and ambiguous_ms of the previous attempt are cleared,
           step:* fields are kept for the new attempt to resume from.
  code  0  not reclaimed: the observation is the current state
           (status '' when the receipt no longer exists). Nothing was written.
]]
local rcall = redis.call
local clock = rcall('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local f = rcall('HMGET', KEYS[1], 'status', 'attempts', 'lease_until_ms', 'effect', 'result', 'ambiguous_ms')
if not f[1] then
  return { 0, '', 0, 0, 0, '', '', '', now, 0 }
end
local status = f[1]
local attempts = tonumber(f[2]) or 0
local leaseUntil = tonumber(f[3]) or 0
local effect = f[4] or ''

local wins = status == ARGV[1] and attempts == tonumber(ARGV[2]) and
  (status == 'failed' or (status == 'running' and leaseUntil <= now and effect ~= 'opaque'))
if not wins then
  local expired, remaining = 0, 0
  if status == 'running' then
    if leaseUntil <= now then expired = 1 else remaining = leaseUntil - now end
  end
  local result = ''
  if status == 'completed' and f[5] then result = f[5] end
  return { 0, status, attempts, expired, remaining, effect, result, f[6] or '', now, leaseUntil }
end

local lease = tonumber(ARGV[3])
local ttl = lease + tonumber(ARGV[4])
leaseUntil = now + lease
attempts = rcall('HINCRBY', KEYS[1], 'attempts', 1)
rcall('HSET', KEYS[1], 'status', 'running', 'lease_until_ms', leaseUntil, 'owner', ARGV[5], 'updated_ms', now)
rcall('HDEL', KEYS[1], 'error', 'tier', 'completed_ms', 'ambiguous_ms', 'resolved_ms')
if rcall('PTTL', KEYS[1]) < ttl then rcall('PEXPIRE', KEYS[1], ttl) end
rcall('ZADD', KEYS[2], 'NX', tonumber(rcall('HGET', KEYS[1], 'created_ms')) or now, KEYS[1])
if rcall('PTTL', KEYS[2]) < ttl then rcall('PEXPIRE', KEYS[2], ttl) end
return { 1, 'running', attempts, 0, lease, effect, '', '', now, leaseUntil }
