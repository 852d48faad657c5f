--[[
  resolve: an operator settles an ambiguous receipt, fenced on the attempts
  the operator saw.

  KEYS[1]  receipt hash
  KEYS[2]  run index

  ARGV[1]  attempts the operator saw
  ARGV[2]  outcome: 'completed' | 'failed'
  ARGV[3]  for completed: result as JSON text ('' = no result value);
           for failed: error text
  ARGV[4]  retention in milliseconds

  A receipt is ambiguous when it is running, its lease is expired by TIME,
  and its effect is opaque or a claim flagged it (ambiguous_ms set).

  Returns an observation (see claim-2.lua for its shape):
  code  1  resolved: status = ARGV[2], completed_ms = resolved_ms = TIME,
           lease cleared, expires retention ms from now. 'failed' lets the
           next claim run the call again as attempt + 1.
  code  0  fenced out: not running, or attempts differ from ARGV[1]
           (status '' when the receipt does not exist). Nothing written.
  code  3  not ambiguous: running at the seen attempts, but the lease is live,
           or the effect is resumable and nobody flagged it. Nothing written.
]]
local rcall = redis.call
local clock = rcall('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local f = rcall('HMGET', KEYS[1], 'status', 'attempts', 'lease_until_ms', 'effect', 'result', 'ambiguous_ms')
if not f[1] then
  return { 0, '', 0, 0, 0, '', '', '', now, 0 }
end
local attempts = tonumber(f[2]) or 0
local leaseUntil = tonumber(f[3]) or 0
local expired, remaining = 0, 0
if f[1] == 'running' then
  if leaseUntil <= now then expired = 1 else remaining = leaseUntil - now end
end
local function observed(code)
  local result = ''
  if f[1] == 'completed' and f[5] then result = f[5] end
  return { code, f[1], attempts, expired, remaining, f[4] or '', result, f[6] or '', now, leaseUntil }
end
if f[1] ~= 'running' or attempts ~= tonumber(ARGV[1]) then
  return observed(0)
end
if expired == 0 or (f[4] ~= 'opaque' and not f[6]) then
  return observed(3)
end

local ttl = tonumber(ARGV[4])
rcall('HSET', KEYS[1], 'status', ARGV[2], 'completed_ms', now, 'resolved_ms', now, 'updated_ms', now)
rcall('HDEL', KEYS[1], 'lease_until_ms')
local result = ''
if ARGV[2] == 'completed' then
  if ARGV[3] ~= '' then
    rcall('HSET', KEYS[1], 'result', ARGV[3])
    result = ARGV[3]
  end
else
  rcall('HSET', KEYS[1], 'error', ARGV[3])
end
rcall('PEXPIRE', KEYS[1], ttl)
if rcall('PTTL', KEYS[2]) < ttl then rcall('PEXPIRE', KEYS[2], ttl) end
return { 1, ARGV[2], attempts, 0, 0, f[4] or '', result, f[6] or '', now, 0 }
