/**
 * Checks a reshaper's answer against the message it came from before it may
 * run.
 */
import { deepEqual } from '../core/deep-equal.js';
import { isRecord, type AssistantMessage } from './types.js';

/** Why {@link guardReshaped} refused a candidate. */
export type GuardVerdict = 'refused_destructive' | 'failed';

/**
 * Checks a reshaped message against the message it was derived from, before
 * anything from it may be used.
 *
 * A reshaper may only change the `input` of existing `tool_use` blocks. So the
 * candidate is refused with `'failed'` when it adds, drops or reorders blocks,
 * changes a `tool_use` block in any field but `input` (its id, its name, any
 * extra field), changes any other block, or changes the message outside its
 * content (its role, for example). It is refused with `'refused_destructive'`
 * when any `tool_use` in it names a destructive tool, since that call's
 * arguments would then have been written by the reshaper. The destructive
 * check comes first, so a candidate that is both is reported as destructive.
 *
 * The check is purely about form: it does not judge what repaired arguments
 * mean. The candidate is typed loosely on purpose, because it comes from a
 * collaborator and is checked at run time.
 *
 * @returns The verdict to fail with, or `null` when the candidate may proceed.
 */
export function guardReshaped(
  original: AssistantMessage,
  candidate: unknown,
  isDestructive: (toolName: string) => boolean,
): GuardVerdict | null {
  if (!isRecord(candidate) || !Array.isArray(candidate.content)) return 'failed';
  const candidateBlocks: unknown[] = candidate.content;
  for (const block of candidateBlocks) {
    if (isRecord(block) && block.type === 'tool_use' && typeof block.name === 'string' && isDestructive(block.name)) {
      return 'refused_destructive';
    }
  }
  if (!deepEqual(withoutKey(original, 'content'), withoutKey(candidate, 'content'))) return 'failed';
  if (candidateBlocks.length !== original.content.length) return 'failed';
  for (let i = 0; i < candidateBlocks.length; i++) {
    if (!sameBlockForm(original.content[i], candidateBlocks[i])) return 'failed';
  }
  return null;
}

function sameBlockForm(before: unknown, after: unknown): boolean {
  if (isRecord(before) && before.type === 'tool_use') {
    return isRecord(after) && after.type === 'tool_use' && deepEqual(withoutKey(before, 'input'), withoutKey(after, 'input'));
  }
  return deepEqual(before, after);
}

function withoutKey(value: Record<string, unknown>, key: string): Record<string, unknown> {
  const { [key]: _dropped, ...rest } = value;
  return rest;
}
