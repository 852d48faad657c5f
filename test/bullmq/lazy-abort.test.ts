import { describe, expect, it } from 'vitest';
import { LazyAbort } from '../../src/bullmq/call/execution.js';

describe('LazyAbort', () => {
  it('reads the parent through without a signal, and a signal made later is already aborted', () => {
    const bullmq = new AbortController();
    const job = new LazyAbort(bullmq.signal);
    const call = new LazyAbort(job);
    expect(call.aborted).toBe(false);
    bullmq.abort('cancelled');
    expect([job.aborted, job.reason, call.aborted, call.reason]).toEqual([true, 'cancelled', true, 'cancelled']);
    expect(call.signal.aborted).toBe(true);
    expect(call.signal.reason).toBe('cancelled');
    expect(() => call.throwIfAborted()).toThrow('cancelled');
  });

  it('a signal made before the abort fires on the parent’s abort, through every level', () => {
    const bullmq = new AbortController();
    const job = new LazyAbort(bullmq.signal);
    const call = new LazyAbort(job);
    const seen: unknown[] = [];
    call.signal.addEventListener('abort', () => seen.push(call.signal.reason));
    job.abort('lock lost');
    expect(seen).toEqual(['lock lost']);
    expect(bullmq.signal.aborted).toBe(false); // a child never aborts its parent
  });

  it('the first abort wins, whichever side it comes from', () => {
    const parent = new LazyAbort();
    const fenced = new LazyAbort(parent);
    fenced.abort('fenced out');
    parent.abort('lock lost');
    expect([fenced.reason, fenced.signal.reason]).toEqual(['fenced out', 'fenced out']);

    const other = new LazyAbort(parent);
    other.abort('too late');
    expect(other.reason).toBe('lock lost');
  });

  it('dispose unlinks a made signal from its parent', () => {
    const parent = new AbortController();
    const call = new LazyAbort(parent.signal);
    const signal = call.signal;
    call.dispose();
    parent.abort('after the call');
    expect(signal.aborted).toBe(false);
  });
});
