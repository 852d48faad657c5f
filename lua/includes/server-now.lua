--[[
  server-now: defines serverNow(), the server clock (TIME) in whole
  milliseconds. Scripts take time only from here, never from os.time, so every
  lease and timestamp is judged on one clock.
]]
local function serverNow()
  local clock = redis.call('TIME')
  return tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
end
