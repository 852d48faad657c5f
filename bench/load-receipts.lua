--[[
  load-receipts (bench only): write one run's receipts in the layout the
  receipt scripts leave, fast. bench/stats.ts checks the field names against
  receipts written by the real store before it trusts this.

  KEYS[1]     run index
  KEYS[2]     the run's counting set (kept as the receipt scripts keep it,
              through the same include)
  KEYS[3..n]  receipt hashes of that run

  ARGV[1] tenant   ARGV[2] run   ARGV[3] tool   ARGV[4] retention ms
  ARGV[5] states, one character per receipt in KEYS[3..n]:
          c completed   f failed   r running (live lease)   a ambiguous
          (opaque, lease lapsed)
  ARGV[6] effects, one character per receipt: o opaque   r resumable

  Returns the number of receipts written.
]]
--- @include "server-now"
--- @include "count"

local now = serverNow()
local retention = tonumber(ARGV[4])
for i = 3, #KEYS do
  local key = KEYS[i]
  local state = string.sub(ARGV[5], i - 2, i - 2)
  local effect = 'opaque'
  if string.sub(ARGV[6], i - 2, i - 2) == 'r' then effect = 'resumable' end
  local hash = string.match(key, ':([^:]*)$')
  redis.call('HSET', key, 'tenant', ARGV[1], 'run', ARGV[2], 'tool', ARGV[3], 'args_hash', hash,
    'status', 'running', 'attempts', 1, 'owner', 'bench:1:loader', 'effect', effect,
    'created_ms', now, 'updated_ms', now, 'started_ms', now, 'epoch', 'bench-' .. i)
  if state == 'c' then
    redis.call('HSET', key, 'status', 'completed', 'completed_ms', now, 'result', '{"content":"ok"}')
  elseif state == 'f' then
    redis.call('HSET', key, 'status', 'failed', 'completed_ms', now, 'error', 'bench failure', 'tier', 'neutral')
  elseif state == 'r' then
    redis.call('HSET', key, 'lease_until_ms', now + retention)
  else
    redis.call('HSET', key, 'lease_until_ms', now - 1000)
  end
  redis.call('PEXPIRE', key, retention)
  redis.call('ZADD', KEYS[1], now, key)
  recountReceipt(KEYS[2], key, now)
end
redis.call('PEXPIRE', KEYS[1], retention)
return #KEYS - 2
