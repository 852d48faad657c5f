--[[
  record-step: store the outcome of one resumable sub-step, fenced on the
  caller's attempt. A later attempt that reclaims the receipt reads it back.

  KEYS[1]  receipt hash
  KEYS[2]  run index

  ARGV[1]  attempt of the caller
  ARGV[2]  field name: 'step:' .. step name
  ARGV[3]  value as JSON text
  ARGV[4]  retention in milliseconds

  Returns an observation (see claim-2.lua for its shape):
  code  1  recorded: field ARGV[2] = ARGV[3]; the TTL is kept at least
           (lease remaining + retention), which it already is unless the
           retention setting grew.
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
local leaseUntil = tonumber(f[3]) or 0
local expired, remaining = 0, 0
if f[1] == 'running' then
  if leaseUntil <= now then expired = 1 else remaining = leaseUntil - now end
end
if f[1] ~= 'running' or attempts ~= tonumber(ARGV[1]) then
  local result = ''
  if f[1] == 'completed' and f[5] then result = f[5] end
  return { 0, f[1], attempts, expired, remaining, f[4] or '', result, f[6] or '', now, leaseUntil }
end

rcall('HSET', KEYS[1], ARGV[2], ARGV[3], 'updated_ms', now)
local ttl = remaining + tonumber(ARGV[4])
if rcall('PTTL', KEYS[1]) < ttl then rcall('PEXPIRE', KEYS[1], ttl) end
if rcall('PTTL', KEYS[2]) < ttl then rcall('PEXPIRE', KEYS[2], ttl) end
return { 1, 'running', attempts, expired, remaining, f[4] or '', '', f[6] or '', now, leaseUntil }
