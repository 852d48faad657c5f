/**
 * The console's approvals: the "Needs approval" page (from the prefix's
 * index of pending approvals) and the form that approves or denies one,
 * fenced on the epoch and digest the page showed, so a decision can never
 * release a call the page did not show.
 */
import { APPROVAL_ACTOR_MAX, APPROVAL_NOTE_MAX } from '../approvals/decide.js';
import { listPendingApprovals } from '../approvals/read.js';
import { ToolReceiptsError } from '../core/errors.js';
import { decideAsOperator, shownArguments } from '../operator/approvals.js';
import type { DurabilityOptions } from '../redis/durability/durability.js';
import { serverTimeMs } from '../redis/runs/counts.js';
import { HttpProblem } from './forms.js';
import type { ConsoleData } from './queries.js';
import { redirect, send, type Request } from './routes.js';
import { approvalsPageView, type ApprovalNotice } from './pages/approvals.js';
import { href } from './pages/layout.js';

/** Calls shown on the page at most (the index is read soonest to expire first). */
export const APPROVALS_PAGE_SIZE = 50;

/** Renders the page, with `notice` above it, at `status`. */
async function render(data: ConsoleData, r: Request, status: number, notice?: ApprovalNotice): Promise<void> {
  const tenant = r.query.get('tenant') ?? undefined;
  const pending = await listPendingApprovals({
    redis: data.redis,
    prefix: data.store.prefix,
    limit: APPROVALS_PAGE_SIZE,
    ...(tenant ? { tenantId: tenant } : {}),
  });
  const rows = [];
  for (const p of pending) rows.push({ pending: p, shown: await shownArguments(data.redis, p) });
  send(r.res, status, approvalsPageView(r.ctx, rows, await serverTimeMs(data.redis), tenant || undefined, notice));
}

/** GET `/approvals`: the page, with the notice a decision redirected with. */
export function approvalsPage(data: ConsoleData): (r: Request) => Promise<void> {
  return async (r) => {
    const decided = r.query.get('decided');
    const key = r.query.get('key') ?? '';
    const notice: ApprovalNotice | undefined =
      decided === 'approved'
        ? { kind: 'ok', text: `Approved ${key}: its job runs the call once, now.` }
        : decided === 'denied'
          ? { kind: 'ok', text: `Denied ${key}: it is never run; the model reads who denied it and the note.` }
          : undefined;
    await render(data, r, 200, notice);
  };
}

/** What the decision form needs besides the console's data. */
export interface ApprovalDecisionDeps {
  readonly data: ConsoleData;
  /** The POST's form once its role (approver or operator) and CSRF token are checked. */
  readonly form: (r: Request) => Promise<URLSearchParams>;
  /** Who is deciding, for the receipt and the audit log. */
  readonly actor: (r: Request) => string;
  readonly retentionMs?: number;
  /** The workers' durability, which a decision waits for. */
  readonly durability?: DurabilityOptions;
}

/**
 * POST `/approvals/decide`: approve or deny, fenced on the page's epoch and
 * digest. A refusal (typed `approval.*` error) is shown above the list as it
 * is now, with 409, nothing written.
 */
export function approvalDecision(deps: ApprovalDecisionDeps): (r: Request) => Promise<void> {
  return async (r) => {
    const form = await deps.form(r);
    const verb = form.get('decision');
    if (verb !== 'approve' && verb !== 'deny') throw new HttpProblem(400, 'choose approve or deny');
    const receiptKey = form.get('key') ?? '';
    const epoch = form.get('epoch') ?? '';
    const argsHash = form.get('args') ?? '';
    if (epoch === '' || argsHash === '') throw new HttpProblem(400, 'the form is missing the epoch and digest the page showed; reload it');
    const note = (form.get('note') ?? '').trim().slice(0, APPROVAL_NOTE_MAX);
    try {
      const { decided } = await decideAsOperator(verb, {
        redis: deps.data.redis,
        prefix: deps.data.store.prefix,
        receiptKey,
        epoch,
        argsHash,
        actor: deps.actor(r).slice(0, APPROVAL_ACTOR_MAX),
        source: 'console',
        ...(note !== '' ? { note } : {}),
        ...(deps.retentionMs !== undefined ? { retentionMs: deps.retentionMs } : {}),
        ...(deps.durability !== undefined ? { durability: deps.durability } : {}),
      });
      redirect(r.res, href(r.ctx, '/approvals', { decided: decided.decision, key: receiptKey }));
    } catch (err) {
      if (!(err instanceof ToolReceiptsError) || !err.code.startsWith('approval.')) throw err;
      await render(deps.data, r, 409, { kind: 'error', text: `Refused: ${err.message}.` });
    }
  };
}
