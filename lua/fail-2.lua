--[[
  fail: settle the receipt as failed, fenced on the caller's attempt. A failed
  receipt may be claimed again: the next claim starts attempt + 1.

  KEYS[1]  receipt hash
  KEYS[2]  run index

  ARGV[1]  attempt of the caller
  ARGV[2]  error text
  ARGV[3]  failure tier ('' = none)
  ARGV[4]  retention in milliseconds

  Returns an observation (see claim-2.lua for its shape):
  code  1  failed: status failed, error and tier stored, completed_ms = TIME,
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

local ttl = tonumber(ARGV[4])
rcall('HSET', KEYS[1], 'status', 'failed', 'error', ARGV[2], 'completed_ms', now, 'updated_ms', now)
if ARGV[3] == '' then
  rcall('HDEL', KEYS[1], 'tier', 'lease_until_ms', 'result')
else
  rcall('HSET', KEYS[1], 'tier', ARGV[3])
  rcall('HDEL', KEYS[1], 'lease_until_ms', 'result')
end
rcall('PEXPIRE', KEYS[1], ttl)
if rcall('PTTL', KEYS[2]) < ttl then rcall('PEXPIRE', KEYS[2], ttl) end
return { 1, 'failed', attempts, 0, 0, f[4] or '', '', f[6] or '', now, 0 }
