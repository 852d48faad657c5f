--[[
  offload-put: store one tool result under a ref, unless the ref is taken.
  Text and owner are written together by this script, so the put that wins
  the ref decides both; no reader can see the text without its owner.

  KEYS[1]  session hash   <prefix>:out:{<encoded session segment>}
           per ref:  c:<ref>  text, UTF-8
                     n:<ref>  length in UTF-16 code units (decimal)
                     x:<ref>  checkpoint index, only for long texts
                     o:<ref>  owner record (JSON); absent = unowned

  ARGV[1]  ref
  ARGV[2]  text
  ARGV[3]  length in UTF-16 code units
  ARGV[4]  checkpoint index, '' when the text needs none
  ARGV[5]  owner record, '' when the put states no owner
  ARGV[6]  retention in milliseconds for the whole hash, '0' = no expiry

  Returns { 0 }               stored now
          { 1, stored_owner } the ref was taken; nothing was written.
                              stored_owner is the owner record, or false when
                              the entry is unowned. The caller judges whether
                              the stated owner conflicts.
  The hash TTL is refreshed when the put stores, and when it is a plain
  repeat (no owner stated, no owner stored, or the same owner record).
]]
local rcall = redis.call
local key = KEYS[1]
local ref = ARGV[1]
local owner = ARGV[5]
local ttl = tonumber(ARGV[6])

local function refresh()
  if ttl and ttl > 0 then rcall('PEXPIRE', key, ttl) end
end

if rcall('HEXISTS', key, 'c:' .. ref) == 1 then
  local stored = rcall('HGET', key, 'o:' .. ref)
  if owner == '' or not stored or stored == owner then refresh() end
  return { 1, stored }
end

rcall('HSET', key, 'c:' .. ref, ARGV[2], 'n:' .. ref, ARGV[3])
if ARGV[4] ~= '' then
  rcall('HSET', key, 'x:' .. ref, ARGV[4])
else
  rcall('HDEL', key, 'x:' .. ref)
end
if owner ~= '' then
  rcall('HSET', key, 'o:' .. ref, owner)
else
  rcall('HDEL', key, 'o:' .. ref)
end
refresh()
return { 0 }
