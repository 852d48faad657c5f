--[[
  lean-complete (bench prototype, not a release script): complete-4.lua's
  fenced settle in the layout of lean-claim.lua (same keys), for
  bench/layout-prototype.ts. Fenced on attempt and epoch; ends the tool's
  rejection streak; counts the receipt completed.

  KEYS[1] receipt hash   KEYS[2] counting set   KEYS[3] breaker hash
  KEYS[4] run index (optional; absent = folded into KEYS[2])

  ARGV[1] attempt   ARGV[2] result JSON   ARGV[3] retention ms
  ARGV[4] rejections field   ARGV[5] epoch   ARGV[6] member

  Returns 1 completed, 0 fenced out (nothing written).
]]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local seen = redis.call('HMGET', KEYS[1], 'status', 'attempts', 'epoch')
if seen[1] ~= 'running' or seen[2] ~= ARGV[1] or seen[3] ~= ARGV[5] then return 0 end
local streak = tonumber(redis.call('HGET', KEYS[3], ARGV[4]))
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'status', 'completed', 'result', ARGV[2], 'completed_ms', string.format('%d', now))
redis.call('HDEL', KEYS[1], 'lease_until_ms')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], string.format('%d', 4e13 + now + ttl), ARGV[6])
redis.call('ZREM', KEYS[2], '?' .. ARGV[6])
local runKeys = { KEYS[2], KEYS[4] }
for i = 1, #runKeys do
  if redis.call('PTTL', runKeys[i]) < ttl then
    redis.call('PEXPIRE', runKeys[i], string.format('%d', ttl + math.min(math.floor(ttl / 8), 3600000)))
  end
end
if streak ~= nil and streak > 0 then redis.call('HSET', KEYS[3], ARGV[4], 0) end
return 1
