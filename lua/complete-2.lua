--[[
  complete: settle the receipt as completed, fenced on the caller's attempt.

  KEYS[1]  receipt hash
  KEYS[2]  run index

  ARGV[1]  attempt of the caller
  ARGV[2]  result as JSON text ('' = no result value)
  ARGV[3]  retention in milliseconds

  Returns an observation (see claim-2.lua for its shape):
  code  1  completed: status completed, result stored, completed_ms = TIME,
           lease cleared; the receipt now expires retention ms from now.
  code  0  fenced out: status is not running or attempts differ from ARGV[1]
           (status '' when the receipt does not exist). Nothing was written.
]]
local rcall = redis.call
local clock = rcall('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local f = rcall('HMGET', KEYS[1], 'status', 'attempts', 'lease_until_ms', 'effect', 'result', 'ambiguous_ms')
if not f[1] then
  return { 0, '', 0, 0, 0, '', '', '', now, 0 }
end
local attempts = tonumber(f[2]) or 0
if f[1] ~= 'running' or attempts ~= tonumber(ARGV[1]) then
  local leaseUntil = tonumber(f[3]) or 0
  local expired, remaining = 0, 0
  if f[1] == 'running' then
    if leaseUntil <= now then expired = 1 else remaining = leaseUntil - now end
  end
  local result = ''
  if f[1] == 'completed' and f[5] then result = f[5] end
  return { 0, f[1], attempts, expired, remaining, f[4] or '', result, f[6] or '', now, leaseUntil }
end

local ttl = tonumber(ARGV[3])
rcall('HSET', KEYS[1], 'status', 'completed', 'completed_ms', now, 'updated_ms', now)
if ARGV[2] == '' then
  rcall('HDEL', KEYS[1], 'result', 'lease_until_ms')
else
  rcall('HSET', KEYS[1], 'result', ARGV[2])
  rcall('HDEL', KEYS[1], 'lease_until_ms')
end
rcall('PEXPIRE', KEYS[1], ttl)
if rcall('PTTL', KEYS[2]) < ttl then rcall('PEXPIRE', KEYS[2], ttl) end
return { 1, 'completed', attempts, 0, 0, f[4] or '', ARGV[2], f[6] or '', now, 0 }
