/**
 * The BullMQ job id of a turn: tenant, run and turn, joined so one turn maps
 * to one job.
 */
import { ToolReceiptsError } from '../core/errors.js';
import { encodeKeyComponent } from '../redis/keys.js';

/** What names one turn of one run: the three parts of its BullMQ job id. */
export interface TurnIdentity {
  readonly tenantId: string;
  readonly runId: string;
  /** Names the turn within the run, e.g. the assistant message's id or its index. */
  readonly turnId: string;
}

/** A tenant, run or turn id that cannot name a job (empty, or not a string). */
export class InvalidTurnIdError extends ToolReceiptsError {
  readonly code = 'turn.invalid_id';
  constructor(
    readonly field: keyof TurnIdentity,
    value: unknown,
  ) {
    super(`${field} must be a non-empty string, got ${JSON.stringify(value) ?? String(value)}; pass the ${field.replace('Id', '')}'s id`);
  }
}

const TURN_JOB_ID_MARK = 'turn';

/**
 * The BullMQ job id of one turn: `turn|<tenant>|<run>|<turn>`, each part
 * percent-encoded as receipt keys are. Encoding leaves no `|`, `:` or `%`
 * unescaped, so distinct (tenant, run, turn) triples never share an id and no
 * id holds the colon BullMQ refuses; the leading `turn` keeps an id from ever
 * being the pure integer BullMQ also refuses.
 */
export function turnJobId(turn: TurnIdentity): string {
  const parts = (['tenantId', 'runId', 'turnId'] as const).map((field) => {
    const value: unknown = turn[field];
    if (typeof value !== 'string' || value.length === 0) throw new InvalidTurnIdError(field, value);
    return encodeKeyComponent(value);
  });
  return [TURN_JOB_ID_MARK, ...parts].join('|');
}
