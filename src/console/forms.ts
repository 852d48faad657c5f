/**
 * Reading what a request asks: its form (from the body, or from what a
 * framework already parsed), the needs-a-person filter, a resolution, and the
 * refusals a bad one gets.
 */
import type { IncomingMessage } from 'node:http';
import type { AmbiguousFilter } from '../redis/runs/ambiguous-index.js';
import { parseAge } from './queries.js';
import type { NeedsFilterForm } from './pages/needs.js';

/** Largest form body read. */
const MAX_BODY = 256 * 1024;

/** A request the console refuses, with the status and the sentence to show. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The fields of a POSTed form; throws {@link HttpProblem} for another body type or one too large. */
export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const parsed = (req as { body?: unknown }).body;
  if (typeof parsed === 'object' && parsed !== null && !Buffer.isBuffer(parsed)) {
    // A framework parsed the body already (express.urlencoded, say).
    const form = new URLSearchParams();
    for (const [name, value] of Object.entries(parsed)) if (typeof value === 'string') form.set(name, value);
    return form;
  }
  const type = String(req.headers['content-type'] ?? '');
  if (!type.startsWith('application/x-www-form-urlencoded'))
    throw new HttpProblem(415, 'forms are sent as application/x-www-form-urlencoded');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new HttpProblem(413, `the form is larger than ${MAX_BODY / 1024} KiB`);
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** The ambiguous-list filter from its form, and what is wrong with the age if anything. */
export function filterOf(form: NeedsFilterForm): { filter: AmbiguousFilter; problem?: string } {
  const age = parseAge(form.age);
  const filter: AmbiguousFilter = {
    ...(form.tenant !== undefined ? { tenantId: form.tenant } : {}),
    ...(form.tool !== undefined ? { toolName: form.tool } : {}),
    ...(typeof age === 'number' ? { minAgeMs: age } : {}),
  };
  return typeof age === 'object' ? { filter, problem: age.problem } : { filter };
}

/**
 * The filter fields of a query string, empty ones left out. The tenant and
 * the tool are ids, taken exactly as given: `"acme "` (a tenant id a job may
 * carry) is not `"acme"`, and trimming it would show, and bulk resolve,
 * another tenant's receipts. Only the age, which is not an id, is trimmed.
 */
export function filterForm(query: URLSearchParams): NeedsFilterForm {
  const tenant = query.get('tenant') ?? '';
  const tool = query.get('tool') ?? '';
  const age = (query.get('age') ?? '').trim();
  return { ...(tenant !== '' ? { tenant } : {}), ...(tool !== '' ? { tool } : {}), ...(age !== '' ? { age } : {}) };
}

/** The attempts the page showed, from its hidden field. */
export function parseAttempts(text: string | null): number {
  const n = text !== null && /^[1-9][0-9]{0,8}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) throw new HttpProblem(400, 'the form is missing the attempts the page showed; reload the receipt');
  return n;
}

/** A resolution from a form's fields (shared by the single and the bulk resolve). */
export function resolutionTemplate(
  form: URLSearchParams,
): { outcome: 'completed'; result: unknown } | { outcome: 'failed'; error: string } {
  const outcome = form.get('outcome');
  if (outcome === 'completed') {
    const text = (form.get('result') ?? '').trim();
    if (text === '') return { outcome, result: undefined };
    try {
      return { outcome, result: JSON.parse(text) as unknown };
    } catch {
      throw new HttpProblem(
        400,
        `the result must be JSON (write a string with its quotes: "sent"), got ${JSON.stringify(text.slice(0, 200))}`,
      );
    }
  }
  if (outcome === 'failed') {
    const error = (form.get('error') ?? '').trim();
    if (error === '') throw new HttpProblem(400, 'resolving as failed needs what you found: it is stored on the receipt');
    return { outcome, error };
  }
  throw new HttpProblem(400, 'choose completed or failed');
}

/** A Redis connection that is down or was dropped: an outage to report, not a bug to log. */
export function isConnectionLoss(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  return (
    (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH)$/.test(code)) ||
    /Connection is closed|Stream isn't writeable|MaxRetriesPerRequestError|Reached the max retries/.test(err.message)
  );
}
