--[[
  lean-claim (bench prototype, not a release script): a fresh claim in a
  leaner receipts layout, for bench/layout-prototype.ts to weigh against
  claim-4.lua. It keeps the claim's decision (create, or report the receipt
  there, or refuse a removed tool) and what the counts need, and drops what
  a leaner layout would: the fields that repeat the key (tenant, run, tool,
  args_hash) and the duplicate timestamps (started_ms, updated_ms), the TYPE
  prechecks, and, when KEYS[4] is absent, the run index (folded into the
  counting set: a run's listing would read its members there).

  KEYS[1]  receipt hash   (short key: <prefix>:r:{<tenant>|<run>}:<member>)
  KEYS[2]  counting set   members are ARGV[6], a short digest of tool and args
  KEYS[3]  breaker hash   (read only)
  KEYS[4]  run index      (optional; absent = folded into KEYS[2])

  ARGV[1] lease ms   ARGV[2] retention ms   ARGV[3] owner   ARGV[4] effect
  ARGV[5] epoch      ARGV[6] member         ARGV[7] removal field
  ARGV[8] rejections field

  Returns { code, status, attempts, epoch, removal, rejections }: code 1
  created, 0 it exists (nothing written), 2 tool removed (nothing written).
]]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local seen = redis.call('HMGET', KEYS[1], 'status', 'attempts', 'epoch')
local breaker = redis.call('HMGET', KEYS[3], ARGV[7], ARGV[8])
local removal, rejections = breaker[1] or '', tonumber(breaker[2]) or 0
if seen[1] then return { 0, seen[1], tonumber(seen[2]), seen[3], removal, rejections } end
if breaker[1] then return { 2, '', 0, '', removal, rejections } end
local lease = tonumber(ARGV[1])
local ttl = lease + tonumber(ARGV[2])
local nowText, ttlText = string.format('%d', now), string.format('%d', ttl)
redis.call('HSET', KEYS[1], 'status', 'running', 'attempts', '1', 'lease_until_ms', string.format('%d', now + lease),
  'owner', ARGV[3], 'effect', ARGV[4], 'created_ms', nowText, 'epoch', ARGV[5], 'schema', '4')
redis.call('PEXPIRE', KEYS[1], ttlText)
-- Opaque and running: the counted entry (band 3) and its ambiguous-from entry, as includes/count.lua lays them out.
redis.call('ZADD', KEYS[2], string.format('%d', 3e13 + now + ttl), ARGV[6], string.format('%d', 9e13 + now + lease), '?' .. ARGV[6])
local runKeys = { KEYS[2], KEYS[4] }
for i = 1, #runKeys do
  if runKeys[i] == KEYS[4] then redis.call('ZADD', KEYS[4], nowText, ARGV[6]) end
  if redis.call('PTTL', runKeys[i]) < ttl then
    redis.call('PEXPIRE', runKeys[i], string.format('%d', ttl + math.min(math.floor(ttl / 8), 3600000)))
  end
end
return { 1, 'running', 1, ARGV[5], removal, rejections }
