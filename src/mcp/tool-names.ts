/**
 * The names the model sees for an MCP server's tools. The MCP spec allows
 * names model APIs refuse (a dot as in `files.read`, more than 64
 * characters, other characters); such a tool is offered under a model-safe
 * name and called on the server under its own.
 */
import { createHash } from 'node:crypto';
import { McpToolListError } from './errors.js';

/** What model APIs take as a tool name. */
export const MODEL_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_LENGTH = 64;
/** Longest `namePrefix`: room is left for a readable part and the digest. */
export const MAX_NAME_PREFIX = 40;
const DIGEST_CHARS = 8;
/** Tries at a fresh digest for one name before giving up (only a list built to collide gets past the first). */
const MAX_TRIES = 64;

/**
 * The model-safe name of each of the server's tool names, in their order,
 * with `prefix` put before each:
 * - a name that is already safe with its prefix (letters, digits, `_`, `-`,
 *   at most 64 characters) is kept as it is;
 * - any other (prefix and name) has each character outside `[A-Za-z0-9_-]` replaced by `_`, is
 *   cut to fit, and ends with `_` and 8 hex digits of the SHA-256 of its
 *   name on the server: `files.read` becomes `files_read_<8 hex>`;
 * - a mapped name that another tool already has (a name on the server
 *   spelt so, or a digest that collides) takes the digest of the name
 *   followed by `#1`, `#2`, … until it is unique.
 *
 * Names kept as they are win over mapped ones, so a server cannot take the
 * name of a tool it lists under a safe name. The result has no duplicates
 * unless the server lists one name twice, and every name in it is safe.
 * Pure and deterministic: the same list gives the same names.
 */
export function modelToolNames(serverNames: readonly string[], prefix = ''): string[] {
  const kept = serverNames.map((name) => `${prefix}${name}`);
  const taken = new Set(kept.filter((name) => MODEL_TOOL_NAME.test(name)));
  return serverNames.map((name, i) => {
    const plain = kept[i]!;
    if (MODEL_TOOL_NAME.test(plain)) return plain;
    const readable = plain.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, MAX_LENGTH - DIGEST_CHARS - 1);
    for (let n = 0; n < MAX_TRIES; n++) {
      const candidate = `${readable}_${digest(n === 0 ? name : `${name}#${n}`)}`;
      if (!taken.has(candidate)) {
        taken.add(candidate);
        return candidate;
      }
    }
    // Unreachable but for a list built against SHA-256 itself; refused rather than offered twice.
    throw new McpToolListError(
      `no unique model-safe name was found for the MCP tool ${JSON.stringify(name)}; leave it out with \`include\``,
    );
  });
}

function digest(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, DIGEST_CHARS);
}

/** A server's tool name for a sentence: quoted, and cut when long (it is the server's text). */
export function shownName(name: string): string {
  return JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
}
