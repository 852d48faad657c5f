--[[
  limit-slot-acquire: take one of the k slots of an in-flight cap for a
  call, in arrival order, or keep the call's place in line. docs/limits.md
  (in-flight caps) says what holds; the keys are laid out in
  includes/limit-slots.lua.

  KEYS[1]  cap state   <prefix>:lim:<scope>:{<tag>}:<name>          (hash)
  KEYS[2]  holders     <prefix>:lim:<scope>:{<tag>}:<name>:held     (zset: receipt key, score = lease deadline ms)
  KEYS[3]  line        <prefix>:lim:<scope>:{<tag>}:<name>:line     (zset: receipt key, score = arrival seq)

  ARGV[1]  the receipt key of the call (one slot per call: a delivery of
           it finds the slot another delivery of it holds)
  ARGV[2]  k: the cap, a whole number >= 1
  ARGV[3]  lease ms: how long a slot is held without being renewed
  ARGV[4]  'wait' (keep the call's place in line when no slot is free for
           it) or 'refuse' (take no place)
  ARGV[5]  the job to wake when the call's turn comes (kept with its place)
  ARGV[6]  place ms: how long a place in line is kept without the call
           asking again (a job that never comes back must not block the line)
  ARGV[7]  the cap's name (kept in the state for readers)
  ARGV[8]  the asker's token: the holder of a slot is a receipt and the
           token of the delivery that holds it
  ARGV[9]  '1' to adopt: the asker's attempt is to execute, so a slot its
           receipt holds under another token becomes its own

  Returns { code, now_ms, deadline_ms, held, position, retry_at_ms }
    code 1  granted: the asker holds a slot until deadline_ms = now +
            ARGV[3] (a holder asking again: its deadline moved there).
    code 3  shared: another delivery of the same call holds its slot (its
            attempt may be running); nothing written. Without adopting,
            the asker neither renews nor frees it.
    code 0  no slot for it: held slots are k, or the calls ahead of it in
            line take the free ones. With 'wait' its place is kept (or
            taken, at the end of the line) until now + ARGV[6]; position
            is how many are ahead of it (-1 with 'refuse'). retry_at_ms: the
            earliest lease deadline of a holder (when a slot frees at the
            latest if its holder stops renewing), or, when no slot is held
            (the free ones are kept for calls ahead in line), now + ARGV[3].
    held    slots held after this call.
  Holders whose lease has passed free their slots first, and places in line
  past their keep are dropped (up to 100 each per call), oldest first.
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type; nothing
  written. Time comes only from TIME.
]]
--- @include "limit-slot-acquire"

return acquireSlot(KEYS[1], KEYS[2], KEYS[3], ARGV)
