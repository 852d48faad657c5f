/**
 * When two `tools/call` requests are the same call: the identity the gateway
 * gives each one (tenant, run, tool, arguments, and the client's call id when
 * it sends one), which names its job and, through the job, its receipt. A
 * re-sent request (a new JSON-RPC id, the same content) gets the same
 * identity, so it attaches to the first one's job or replays its receipt.
 * Pure.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from '../core/canonical-json.js';
import { isWellFormedText } from '../core/identity.js';
import { encodeKeyComponent } from '../redis/keys.js';

/** The `_meta` key a client names its run with, to share receipts across sessions (or to name one): a string. */
export const GATEWAY_RUN_ID_META = 'bullmq-tool-receipts/run-id';

/**
 * The `_meta` key a client names one call with, so two calls with the same
 * tool and arguments in one run are two calls: a string the client keeps
 * when it re-sends the request.
 */
export const GATEWAY_CALL_ID_META = 'bullmq-tool-receipts/call-id';

/** Longest run id or call id a client may send in `_meta`. */
export const MAX_META_ID_LENGTH = 256;

/**
 * Where a call was made when the client names no run: its HTTP session (the
 * `Mcp-Session-Id`), or one stdio connection (a gateway process).
 */
export interface CallScope {
  readonly kind: 'session' | 'stdio';
  readonly id: string;
}

/** A call's identity: the receipt's tenant and run, and the turn (its job) within the run. */
export interface GatewayCallIdentity {
  readonly tenantId: string;
  readonly runId: string;
  /** Names the call's job within the run, and is its `tool_use` id: the tool and the digest of the canonical arguments. */
  readonly turnId: string;
}

/** A `_meta` run id or call id that cannot name anything; the request is refused, nothing is enqueued. */
export class InvalidCallMetaError extends Error {
  constructor(readonly key: string) {
    super(
      `_meta["${key}"] must be a string of 1 to ${MAX_META_ID_LENGTH} characters of well-formed text; leave it out to let the gateway choose`,
    );
  }
}

function metaId(meta: Readonly<Record<string, unknown>> | undefined, key: string): string | undefined {
  if (meta === undefined || !Object.hasOwn(meta, key)) return undefined;
  const value = meta[key];
  if (typeof value !== 'string' || value === '' || value.length > MAX_META_ID_LENGTH || !isWellFormedText(value)) {
    throw new InvalidCallMetaError(key);
  }
  return value;
}

/**
 * The identity of one call. The run is `run:<id>` for a run id the client
 * sent in `_meta`, else `session:<id>` or `stdio:<id>` of `scope`; a call id
 * sent in `_meta` is added as `:call:<id>`. Every part is percent-encoded as
 * receipt keys are (no `:` survives it), so distinct scopes, run ids and call
 * ids never give one run. The turn is `<tool>:<SHA-256 of the canonical
 * arguments>`: key order and spacing do not count, values do. Throws
 * {@link InvalidCallMetaError} for a run id or call id it cannot use, and
 * what `canonicalJson` throws for arguments it cannot represent.
 */
export function gatewayCallIdentity(
  tenantId: string,
  scope: CallScope,
  toolName: string,
  args: unknown,
  meta?: Readonly<Record<string, unknown>>,
): GatewayCallIdentity {
  const run = metaId(meta, GATEWAY_RUN_ID_META);
  const call = metaId(meta, GATEWAY_CALL_ID_META);
  const base = run === undefined ? `${scope.kind}:${encodeKeyComponent(scope.id)}` : `run:${encodeKeyComponent(run)}`;
  const runId = call === undefined ? base : `${base}:call:${encodeKeyComponent(call)}`;
  const turnId = `${encodeKeyComponent(toolName)}:${hash('sha256', canonicalJson(args), 'hex')}`;
  return { tenantId, runId, turnId };
}
