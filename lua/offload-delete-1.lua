--[[
  offload-delete: remove entries of one session hash whose owner record is
  still exactly the one the caller read. The caller picks the refs by their
  recorded owner; this script only makes each removal a compare-and-delete,
  so an entry removed or re-written since it was read is left alone.

  KEYS[1]  session hash   <prefix>:out:{<encoded session segment>}
           (fields as in offload-put-1.lua)

  ARGV[2i-1]  ref
  ARGV[2i]    owner record expected in o:<ref>

  Returns the number of entries removed by this call.
]]
local rcall = redis.call
local key = KEYS[1]
local removed = 0
for i = 1, #ARGV - 1, 2 do
  local ref = ARGV[i]
  if rcall('HEXISTS', key, 'c:' .. ref) == 1 and rcall('HGET', key, 'o:' .. ref) == ARGV[i + 1] then
    rcall('HDEL', key, 'c:' .. ref, 'n:' .. ref, 'x:' .. ref, 'o:' .. ref)
    removed = removed + 1
  end
end
return removed
