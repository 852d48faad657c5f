--[[
  limit-bindings: defines revokedMark(), the value of a revoked reservation
  in a run's bindings hash, keepBindings(bindingsKey, keepMs) and
  bindingAttemptField(field). They touch only the keys they are given,
  which the calling script takes from its KEYS.

  A run's bindings hash <prefix>:lbd:{<tenant>|<run>} maps a reservation id
  to what became of it on the run's side:
    <receipt key>  bound: an attempt of that receipt was started under it
                   (the receipt's field limit:<name> holds the id too, and
                   limit:<name>:attempt the attempt it was bound for)
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

  bindingAttemptField(field)  the receipt field beside a limit's binding
    field (limit:<name>) that holds the attempt the reservation was bound
    for: a later bind of the same id by another attempt (a takeover) is
    then told apart from one by the same attempt. Limit names hold no ':',
    so it never names another limit's field.
]]
--- @include "ttl"

local function revokedMark() return 'revoked' end

local function keepBindings(bindingsKey, keepMs)
  keepAtLeast(bindingsKey, tonumber(keepMs))
end

local function bindingAttemptField(field) return field .. ':attempt' end
