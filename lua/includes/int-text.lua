--[[
  int-text: defines intText(n), the decimal text of a whole number below
  2^53 (a time in ms, a TTL, a counting-set score). Scripts hand Redis such
  text instead of the number: Redis turns each Lua number argument into text
  with %.17g, which costs about three times one %d here, and one text serves
  every argument that repeats the value.
]]
local function intText(n)
  return string.format('%d', n)
end
