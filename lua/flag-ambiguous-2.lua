--[[
  flag-ambiguous: record that a claim found this receipt ambiguous (a running
  attempt lost its lease and its effect cannot be resumed), and keep it.

  KEYS[1]  receipt hash
  KEYS[2]  run index

  ARGV[1]  attempts the caller observed
  ARGV[2]  retention in milliseconds

  Acts only while status = running, attempts = ARGV[1] and the lease is
  expired by TIME. ambiguous_ms is set from TIME with HSETNX, so it keeps the
  first time; every call keeps the receipt (and the run index) at least
  retention ms from now, so an ambiguous call that is still being retried is
  not forgotten.

  Returns an observation (see claim-2.lua for its shape), ambiguous_ms filled:
  code  1  flagged now
  code  2  already flagged earlier (ambiguous_ms unchanged)
  code  0  the state moved on (settled, reclaimed, heartbeated, or gone:
           status ''); the observation is the current state. Nothing written.
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
if f[1] ~= 'running' or attempts ~= tonumber(ARGV[1]) or leaseUntil > now then
  local expired, remaining = 0, 0
  if f[1] == 'running' then
    if leaseUntil <= now then expired = 1 else remaining = leaseUntil - now end
  end
  local result = ''
  if f[1] == 'completed' and f[5] then result = f[5] end
  return { 0, f[1], attempts, expired, remaining, f[4] or '', result, f[6] or '', now, leaseUntil }
end

local code = 2
if rcall('HSETNX', KEYS[1], 'ambiguous_ms', now) == 1 then code = 1 end
local ttl = tonumber(ARGV[2])
if rcall('PTTL', KEYS[1]) < ttl then rcall('PEXPIRE', KEYS[1], ttl) end
if rcall('PTTL', KEYS[2]) < ttl then rcall('PEXPIRE', KEYS[2], ttl) end
return { code, 'running', attempts, 1, 0, f[4] or '', '', rcall('HGET', KEYS[1], 'ambiguous_ms'), now, leaseUntil }
