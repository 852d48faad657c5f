/**
 * How an MCP tool's calls are recovered (read-only, idempotent, opaque), as
 * `mcpTools` resolves it.
 */
import type { ToolAnnotations, ToolEffect } from '../bullmq/tools/define-tool.js';

/**
 * How an MCP tool's calls are recovered, as `mcpTools` resolves it:
 * - `read-only`: runs without a receipt; every delivery may run it again;
 * - `idempotent`: a receipt, and a call whose outcome is unknown is run again;
 * - `opaque`: a receipt, and a call whose outcome is unknown is ambiguous
 *   (unless a `reconcile` settles it);
 * - `keyed`: opaque for the receipt, but run again with the same idempotency
 *   key inside `keyWindowMs` (the server deduplicates on the `_meta` key).
 */
export type McpEffectClass = 'read-only' | 'idempotent' | 'opaque' | 'keyed';

/**
 * What a team says about one MCP tool. Every field set here wins over the
 * server's annotations; a field left out falls back to them (or, with
 * `trustAnnotations: false`, to the most careful value).
 */
export interface McpEffectOverride {
  /** The effect class, whatever the annotations say. */
  readonly effect?: McpEffectClass;
  /** Whether a failure of this tool may have half-changed the world. */
  readonly destructive?: boolean;
}

/** The flags `defineTool` takes, resolved for one MCP tool. */
export interface ResolvedMcpEffect {
  readonly effectClass: McpEffectClass;
  /** Never `transactional`: an MCP server's tool writes nothing to the team's own database. */
  readonly effect: Exclude<ToolEffect, 'transactional'>;
  readonly readOnly: boolean;
  readonly idempotent: boolean;
  readonly destructive: boolean;
}

/**
 * Resolve an MCP tool's effect class. Annotations read with MCP's defaults:
 * `readOnlyHint: true` is read-only; else `idempotentHint: true` is
 * idempotent; else opaque. A tool that is not read-only is destructive unless
 * `destructiveHint` is `false`. A team's override wins field by field, so an
 * annotation from the server can never loosen it. With `trust` false the
 * annotations are not read at all: opaque and destructive unless overridden.
 * Pure.
 */
export function resolveMcpEffect(
  annotations: ToolAnnotations | undefined,
  override: McpEffectOverride = {},
  trust = true,
): ResolvedMcpEffect {
  const hints = trust ? (annotations ?? {}) : {};
  const effectClass: McpEffectClass =
    override.effect ?? (hints.readOnlyHint === true ? 'read-only' : hints.idempotentHint === true ? 'idempotent' : 'opaque');
  const readOnly = effectClass === 'read-only';
  const destructive = override.destructive ?? (readOnly ? false : hints.destructiveHint !== false);
  return {
    effectClass,
    // A read-only call has no receipt unless the deployment names it destructive; then it is
    // treated with the care of an opaque one. An idempotent call is taken over and run again.
    effect: effectClass === 'idempotent' ? 'resumable' : effectClass === 'keyed' ? 'keyed' : 'opaque',
    readOnly,
    idempotent: readOnly || effectClass === 'idempotent',
    destructive,
  };
}
