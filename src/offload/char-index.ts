/**
 * Checkpoints between UTF-16 offsets and UTF-8 bytes, so a stored result is
 * read back by character window.
 */
import { splitsSurrogatePair } from './text.js';

/** Nominal distance, in UTF-16 code units, between two checkpoints. */
export const CHECKPOINT_STRIDE_CHARS = 4096;

/** Width of one checkpoint record: 12 digits of code units, 12 of bytes. */
export const CHECKPOINT_RECORD_CHARS = 24;

const pad = (n: number): string => String(n).padStart(12, '0');

/**
 * The checkpoint index that lets a byte-oriented store cut a window out of
 * stored UTF-8 without reading the whole text back to the client.
 *
 * One record per stride: the code-unit position and the UTF-8 byte offset of
 * the same point in `text`, as fixed-width decimal so a Lua script can binary
 * search it. A point that would fall inside a surrogate pair moves one unit
 * forward, so every record sits on a character boundary. Positions 0 and the
 * end are implied and not written; a text of at most one stride has an empty
 * index. `text` must be well-formed (see `toWellFormedText`).
 */
export function buildCheckpointIndex(text: string, stride = CHECKPOINT_STRIDE_CHARS): string {
  let index = '';
  let previous = 0;
  let bytes = 0;
  for (let nominal = stride; nominal < text.length; nominal += stride) {
    const point = splitsSurrogatePair(text, nominal) ? nominal + 1 : nominal;
    if (point <= previous || point >= text.length) continue;
    bytes += Buffer.byteLength(text.slice(previous, point), 'utf8');
    index += pad(point) + pad(bytes);
    previous = point;
  }
  return index;
}
