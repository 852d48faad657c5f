--[[
  limit-bind: record a granted reservation on the attempt it pays for, on
  the run's side, unless it was revoked. The claim that starts the attempt
  does the same; this script is that step alone.

  KEYS[1]  receipt hash    <prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>
  KEYS[2]  bindings hash   <prefix>:lbd:{<tenant>|<run>}  (see includes/limit-bindings.lua)

  ARGV[1]  reservation id
  ARGV[2]  the receipt field of the limit: limit:<name>
  ARGV[3]  keep ms: the least time the bindings hash is kept afterwards
  ARGV[4]  optional: the epoch a claim sent just before this bind minted.
           When given (not ''), only the attempt that claim created is
           bound: a receipt whose epoch is another, or whose attempt is
           not the first, answers 3 and nothing is written. The wrapper
           sends a bind this way beside the claim, before the claim's
           answer, so that a fresh call costs no round trip of its own.

  Returns { code, holder }
    code 1  bound: the receipt's field ARGV[2] holds the id (and the field
            ARGV[2]:attempt the receipt's current attempt), and the bindings
            hash maps it to KEYS[1]; also when it was bound so for this very
            attempt already (nothing new written).
    code 0  revoked: a settle (or an earlier bind or give-back) revoked it;
            nothing written. The attempt must not run under it.
    code 2  counted already: the receipt's field holds another reservation
            (holder), bound by an earlier attempt of this lifetime (a
            takeover is the same execution). This id is revoked; the caller
            gives it back, and the attempt runs counted once. Also when this
            very id was bound to KEYS[1] for an earlier attempt (a takeover
            that reused its lifetime's pending share), or by a release that
            recorded no attempt; holder is then the id itself: nothing
            written, and the caller commits it and never gives it back, as
            the earlier attempt may have run under it.
    code 3  no running attempt: the receipt does not exist or is not
            running (or, with ARGV[4], is not the attempt that claim
            created); nothing written. The caller gives it back, or binds
            again without ARGV[4] once the claim's answer says which
            attempt runs.
    holder is '' unless code is 2.
  error 'TRC_CORRUPT <key>: <why>' when the receipt is malformed, a key
  has the wrong type, or the id is bound to another receipt (ids are
  random: only a hand edit does that); 'TRC_VERSION ...' for a receipt of a
  newer layout (see includes/observe-receipt.lua); nothing written.
]]
--- @include "limit-bind"

return bindLimit(KEYS[1], KEYS[2], ARGV)
