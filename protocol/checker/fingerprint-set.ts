/**
 * The set of states seen, kept as 64-bit fingerprints of their canonical
 * bytes in one open-addressed table of typed arrays (8 bytes a state), as
 * explicit-state checkers do: a million states cost 16 MB, not a million
 * strings. Two distinct states share a fingerprint with odds of about
 * n² / 2⁶⁵ (one in ten million at two million states); the checker prints
 * them with its count.
 */

/** Two independent 32-bit hashes of `bytes` (FNV-1a, and a multiply-rotate mix), as the high and low words. */
export function fingerprint(bytes: Uint8Array): [number, number] {
  let high = 0x811c9dc5;
  let low = 0x9e3779b9 ^ bytes.length;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    high = Math.imul(high ^ byte, 0x01000193);
    low = Math.imul(low ^ byte, 0x85ebca6b);
    low = (low << 13) | (low >>> 19);
  }
  low = Math.imul(low ^ (low >>> 16), 0xc2b2ae35);
  low ^= low >>> 13;
  // (0, 0) marks an empty slot, so no fingerprint is that.
  return [high >>> 0, (low | 1) >>> 0];
}

export class FingerprintSet {
  private high: Uint32Array;
  private low: Uint32Array;
  private mask: number;
  size = 0;

  constructor(capacity = 1 << 20) {
    let slots = 1;
    while (slots < capacity * 2) slots *= 2;
    this.high = new Uint32Array(slots);
    this.low = new Uint32Array(slots);
    this.mask = slots - 1;
  }

  /** Adds the fingerprint; true when it was not there before. */
  add(high: number, low: number): boolean {
    let slot = (high ^ Math.imul(low, 0x9e3779b1)) & this.mask;
    for (;;) {
      const h = this.high[slot]!;
      const l = this.low[slot]!;
      if (h === 0 && l === 0) break;
      if (h === high && l === low) return false;
      slot = (slot + 1) & this.mask;
    }
    this.high[slot] = high;
    this.low[slot] = low;
    this.size++;
    if (this.size * 2 > this.mask) this.grow();
    return true;
  }

  has(high: number, low: number): boolean {
    let slot = (high ^ Math.imul(low, 0x9e3779b1)) & this.mask;
    for (;;) {
      const h = this.high[slot]!;
      const l = this.low[slot]!;
      if (h === 0 && l === 0) return false;
      if (h === high && l === low) return true;
      slot = (slot + 1) & this.mask;
    }
  }

  private grow(): void {
    const { high, low } = this;
    this.high = new Uint32Array(high.length * 2);
    this.low = new Uint32Array(low.length * 2);
    this.mask = this.high.length - 1;
    this.size = 0;
    for (let i = 0; i < high.length; i++) if (high[i] !== 0 || low[i] !== 0) this.add(high[i]!, low[i]!);
  }
}
