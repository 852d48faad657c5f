--[[
  breaker-record: count a failure, a rejection or a success of one tool in
  one run, and remove the tool once a limit is reached.

  KEYS[1]  breaker hash   <prefix>:brk:{<tenant>|<run>}
           fields <tool>:failures, <tool>:rejections (consecutive),
                  <tool>:removed (reason text, set once)

  ARGV[1]  kind: 'failure' | 'rejection' | 'success'
  ARGV[2]  encoded tool name
  ARGV[3]  limit for this kind (failures or consecutive rejections)
  ARGV[4]  '1' to remove the tool now, whatever the count
  ARGV[5]  removal reason text
  ARGV[6]  retention in milliseconds (TTL of the whole hash)

  Returns { count, removed (0|1), removed_now (0|1) }
    count  failures so far for 'failure', the rejection streak for
           'rejection', 0 for 'success' (which resets only the streak).
    removed_now is 1 only for the call that removed the tool.
]]
local rcall = redis.call
local tool = ARGV[2]
local removedField = tool .. ':removed'
local count = 0
if ARGV[1] == 'failure' then
  count = rcall('HINCRBY', KEYS[1], tool .. ':failures', 1)
elseif ARGV[1] == 'rejection' then
  count = rcall('HINCRBY', KEYS[1], tool .. ':rejections', 1)
elseif ARGV[1] == 'success' then
  rcall('HSET', KEYS[1], tool .. ':rejections', 0)
else
  return redis.error_reply('breaker-record: unknown kind ' .. tostring(ARGV[1]))
end

local removed, removedNow = 0, 0
if rcall('HEXISTS', KEYS[1], removedField) == 1 then
  removed = 1
elseif ARGV[1] ~= 'success' and (ARGV[4] == '1' or count >= tonumber(ARGV[3])) then
  rcall('HSET', KEYS[1], removedField, ARGV[5])
  removed, removedNow = 1, 1
end
rcall('PEXPIRE', KEYS[1], tonumber(ARGV[6]))
return { count, removed, removedNow }
