--[[
  limit-slot-release: free the slot of an in-flight cap its holder holds
  (its attempt was settled), and name the jobs to wake: those first in line
  that a slot is free for now. The keys are laid out in
  includes/limit-slots.lua.

  KEYS[1]  cap state   <prefix>:lim:<scope>:{<tag>}:<name>          (hash)
  KEYS[2]  holders     <prefix>:lim:<scope>:{<tag>}:<name>:held     (zset)
  KEYS[3]  line        <prefix>:lim:<scope>:{<tag>}:<name>:line     (zset)

  ARGV[1]  the receipt key of the call
  ARGV[2]  the holder's token (a slot another delivery adopted is not freed)
  ARGV[3]  the job a place in line names ('' or absent: the place is kept):
           the call's place in line, when it names this job, is given up
           too (the call will not execute, and will not come back for it),
           whether or not the holder held a slot

  Returns { released, now_ms, held, waiting, job1, ..., jobn }
    released  1 when this freed the slot, 0 when the holder did not hold it
              (a place given up is not counted here)
    held, waiting  slots held and places in line afterwards
    job1..n   the jobs (as the acquire kept them) of the first places in
              line a slot is free for, at most the free slots
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type.
  Time comes only from TIME.
]]
--- @include "limit-slot-release"

return releaseSlot(KEYS[1], KEYS[2], KEYS[3], ARGV)
