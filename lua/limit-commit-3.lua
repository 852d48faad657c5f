--[[
  limit-commit: count a pending reservation as used: its call executed (the
  reservation was bound to the attempt that ran it). A sliding window or a
  bucket counts it from now, on the server clock (see
  includes/limit-smooth.lua): the wrapper commits those when the attempt
  ends.

  KEYS[1]  limit state    <prefix>:lim:<scope>:{<tag>}:<name>       (hash)
  KEYS[2]  pending        <prefix>:lim:<scope>:{<tag>}:<name>:due   (zset)
  KEYS[3]  committed      <prefix>:lim:<scope>:{<tag>}:<name>:done  (zset)
           (see includes/limit-state.lua)

  ARGV[1]  reservation id

  Returns { code } (a sliding window's or a bucket's commit: { 1,
  kept_until_ms, now_ms, resets_at_ms }: how long its keys are kept now (see
  keepLimit), and when every committed unit is free)
    code 1  committed: no longer due (nor the receipt's pending one); when reserved in the stored window,
            its amount moved from pending to used and its record is kept
            (state c, listed in KEYS[3] under the window's gen, or the
            time of the commit for the other kinds) so that a give-back
            (limit-release-3.lua) can still take it out of used; a bucket's
            tat moves on, and the keys are kept (see keepLimit). A fixed
            window's list that this commit creates is kept as long as the
            state.
            A reservation of an earlier window is only dropped: that
            window's count is over.
    code 2  already committed; nothing written.
    code 0  unknown: given back already, or its window's records are gone;
            nothing written (a commit never counts what was given back).
  error 'TRC_CORRUPT <key>: <why>' as includes/limit-state.lua's
  openReservation answers it (nothing written, no time judged).
]]
--- @include "limit-commit"

return commitLimit(KEYS[1], KEYS[2], KEYS[3], ARGV)
