--[[
  open-transition: the opening of every script that moves one receipt, with
  the keys such a script declares first: KEYS[1] the receipt hash, KEYS[2]
  its run index, KEYS[3] the run's counting set. Unlike the other includes
  it runs where it stands: it defines the locals
    rcall    redis.call
    now      the server clock (serverNow), read once for the whole script
    receipt  KEYS[1] as openReceipt read it (includes/observe-receipt.lua)
  and returns from the script at once, before anything is written, the
  'TRC_CORRUPT <key>: <why>' or 'TRC_VERSION <key>: …' error reply when
  openReceipt refuses the keys. It brings the includes every transition
  uses: server-now, ttl, fenced and count.
]]
--- @include "server-now"
--- @include "ttl"
--- @include "fenced"
--- @include "count"

local rcall = redis.call
local now = serverNow()
local receipt, corrupt = openReceipt(KEYS[1], KEYS[2], KEYS[3])
if corrupt then return corrupt end
