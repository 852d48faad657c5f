--[[
  limit-reserve: reserve `amount` of one limit's window for one call, when
  it fits, and report the pending reservations whose deadline has passed
  (for the caller to settle: see limit-settle-2.lua). The window is fixed,
  sliding or a token bucket (see includes/limit-smooth.lua).

  KEYS[1]  limit state    <prefix>:lim:<scope>:{<tag>}:<name>       (hash)
  KEYS[2]  pending        <prefix>:lim:<scope>:{<tag>}:<name>:due   (zset, score = deadline ms)
  KEYS[3]  committed      <prefix>:lim:<scope>:{<tag>}:<name>:done  (zset, score = window gen)
           (see includes/limit-state.lua)

  ARGV[1]  reservation id (random, minted by the caller; no spaces), used
           when the receipt has no pending reservation of its own
  ARGV[2]  amount: a whole number >= 1 (1 for a count, the call's cost for a budget)
  ARGV[3]  max: the most the window holds (a bucket: units per window), a whole number >= 1
  ARGV[4]  window length in ms (whole number >= 1)
  ARGV[5]  bound in ms: how long the reservation waits for its claim
  ARGV[6]  the receipt key the reservation is for
  ARGV[7]  the bindings hash of that receipt's run  <prefix>:lbd:{<tenant>|<run>}
  ARGV[8]  the limit's name (kept in the state for readers)
  ARGV[9]  the most expired reservations to report
  ARGV[10] the kind: fixed (also when absent), sliding or bucket
  ARGV[11] a bucket's burst, a whole number >= 1 ('' for the other kinds)

  Returns { code, now_ms, window_start_ms, resets_at_ms, used, pending,
            deadline_ms, id, reused, retry_at_ms, kept_until_ms, held,
            next_free_ms, n, id1, bindings1, receipt1, ..., idn, bindingsn, receiptn }
    code 1  granted: the record r:<id> (pending) is written with
            p:<ARGV[6]> = id, the id is due at deadline_ms = now + ARGV[5],
            pending grew by the amount; reused 0. When the receipt already
            has a pending reservation in this window (a delivery of the same
            call made it, and died before its claim or is still on its way),
            that one is granted instead, reused 1: its id, its deadline moved
            to now + ARGV[5] if that is later, nothing else written (whoever
            holds it does not give it back blindly: see limit-settle-2.lua).
            A reservation id already recorded is answered granted again with
            its deadline (0 when committed) and nothing is written for it:
            a reserve sent twice reserves once.
    code 0  full: it does not fit beside what is used and pending;
            nothing reserved (deadline_ms 0). retry_at_ms: when it may fit
            at the earliest (a fixed window's reset at the latest); held 1
            when that is the deadline by which enough pending reservations
            are given back if their calls do not run (see retryAt in
            includes/limit-smooth.lua), else 0.
    code 2  exceeds: amount > max (a bucket: > burst); it will never fit.
    id       the reservation granted ('' unless code 1).
    kept_until_ms  how long the keys are kept now (see keepLimit): the
             caller lists the count in its prefix's index until then.
    used     what committed units hold now (a fixed window: committed in
             it; sliding: committed in the last window length; a bucket: not
             yet paid back, in whole units); pending: amounts of the live
             reservations (expired ones included until they are settled),
             after this call. resets_at_ms: when what is committed is all
             free; next_free_ms: when the next unit of it frees (0: none).
    n        expired pending reservations reported, at most ARGV[9]: each
             its id, its run's bindings hash and its receipt key.
  Every answer stores the current window (a new one starts used and
  pending at 0), max and name, drops records committed in earlier windows
  (100 at most), or out of a sliding window or bucket's length, and due
  entries whose record is gone, and keeps the keys
  (see keepLimit). The expired reservations are read before this call's
  own (whose deadline is in the future).
  error 'TRC_CORRUPT <key>: <why>' when a key has the wrong type or the
  state does not parse; nothing written.
  Time comes only from TIME.
]]
--- @include "limit-reserve"

return reserveLimit(KEYS[1], KEYS[2], KEYS[3], ARGV)
