--[[
  limit-bindings: defines revokedMark(), the value of a revoked reservation
  in a run's bindings hash, and keepBindings(bindingsKey, keepMs). They touch
  only the keys they are given, which the calling script takes from its
  KEYS.

  A run's bindings hash <prefix>:lbd:{<tenant>|<run>} maps a reservation id
  to what became of it on the run's side:
    <receipt key>  bound: an attempt of that receipt was started under it
                   (the receipt's field limit:<name> holds the id too)
    'revoked'      never to be bound: a settle found it unbound past its
                   deadline, a bind found the receipt already counted, or
                   its attempt gave it back (never started)
  An id not in the hash is neither yet. Each id is written once from
  absent, except bound -> revoked when its attempt gives it back; so a
  settle (which revokes what it finds absent) and a bind (which binds only
  what it finds absent) can never both win.

  keepBindings(bindingsKey, keepMs)  keeps the hash at least keepMs more
    (never shortens it): long enough for every settle that may still ask,
    which the caller derives from the longest window of its limits.
]]
--- @include "ttl"

local function revokedMark() return 'revoked' end

local function keepBindings(bindingsKey, keepMs)
  keepAtLeast(bindingsKey, tonumber(keepMs))
end
