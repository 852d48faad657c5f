/**
 * Shared setup for the console's tests: receipts made ambiguous by real
 * worker processes SIGKILLed in the middle of an opaque effect, the console
 * served over HTTP, and a headless Chromium (Debian's package) driven by
 * playwright-core.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Job, Queue } from 'bullmq';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { spawnWorkerProcess, type WorkerProcess } from '../support/worker-process.js';
import { CRASH_WORKER_TIMING } from '../bullmq/fixture.js';

/**
 * The browser the tests drive: Debian's chromium, headless, with nothing
 * running in the background; `extraArgs` for a test's own switches (a
 * `--host-resolver-rules` that plays a rebinding DNS server, say).
 */
export function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extraArgs,
    ],
  });
}

/** What a page did that it must not: dialogs opened, console errors, uncaught errors. */
export interface PageTrouble {
  readonly dialogs: string[];
  readonly consoleErrors: string[];
  readonly pageErrors: string[];
}

/** A fresh browser context (its own cookies) with one page whose dialogs and errors are recorded. */
export async function openPage(browser: Browser): Promise<{ context: BrowserContext; page: Page; trouble: PageTrouble }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const trouble: PageTrouble = { dialogs: [], consoleErrors: [], pageErrors: [] };
  page.on('dialog', (dialog) => {
    trouble.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('console', (message) => {
    if (message.type() === 'error') trouble.consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => trouble.pageErrors.push(error.message));
  return { context, page, trouble };
}

/**
 * Where the screenshots go: docs/console/ (the pictures the docs show) when
 * UPDATE_SCREENSHOTS=1, else test-output/console/ (git-ignored), so an
 * ordinary test run leaves the working tree as it was.
 */
const SHOTS = fileURLToPath(
  new URL(process.env['UPDATE_SCREENSHOTS'] === '1' ? '../../docs/console/' : '../../test-output/console/', import.meta.url),
);

/** Screenshots of the page as it is, at 1280×800 and at a phone's 390×844. */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: `${SHOTS}${name}-1280.png` });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: `${SHOTS}${name}-390.png` });
  await page.setViewportSize({ width: 1280, height: 800 });
}

/** The data of a job of tool calls. */
export interface ToolJob {
  readonly tenantId: string;
  readonly runId: string;
  readonly calls: readonly { readonly id: string; readonly name: string; readonly input: unknown }[];
}

/** Job data of one send_email call. */
export function emailJob(tenantId: string, runId: string, callId: string, to = 'ops@example.com'): ToolJob {
  return {
    tenantId,
    runId,
    calls: [{ id: callId, name: 'send_email', input: { to, subject: `Report for ${tenantId}`, body: 'Attached.' } }],
  };
}

/**
 * Adds the jobs to `queue`, lets one real worker process take them all and
 * freeze just before each email goes out, then SIGKILLs it: each call's
 * receipt is left running with a lease that lapses, an opaque attempt nobody
 * can vouch for (calls of other tools before it settle normally). Returns the jobs.
 */
export async function killMidEffect(target: { url: string; prefix: string; queue: Queue }, jobs: readonly ToolJob[]): Promise<Job[]> {
  const worker: WorkerProcess = await spawnWorkerProcess('crash-worker', {
    REDIS_URL: target.url,
    PREFIX: target.prefix,
    QUEUE: target.queue.name,
    CRASH_AT: 'before-effect',
    CRASH_TOOL: 'send_email',
    CONCURRENCY: String(jobs.length),
    ...CRASH_WORKER_TIMING,
  });
  try {
    const added = await Promise.all(jobs.map((data) => target.queue.add('call', data, { attempts: 1 })));
    const deadline = Date.now() + 60_000;
    while (worker.messages.filter((m) => m.type === 'reached' && m.point === 'before-effect').length < jobs.length) {
      if (Date.now() > deadline)
        throw new Error(`the worker froze in ${worker.messages.filter((m) => m.type === 'reached').length} of ${jobs.length} calls`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await worker.signal('SIGKILL');
    return added;
  } finally {
    await worker.signal('SIGKILL');
  }
}

/** Waits until every job is in `state`. */
export async function waitForJobs(queue: Queue, jobs: readonly Job[], state: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const states = await Promise.all(jobs.map(async (j) => (await Job.fromId(queue, j.id!))?.getState()));
    if (states.every((s) => s === state)) return;
    if (Date.now() > deadline) expect(states).toEqual(jobs.map(() => state));
    await new Promise((r) => setTimeout(r, 100));
  }
}
