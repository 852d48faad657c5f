/**
 * Heartbeats that keep a running call's receipt lease alive while its tool
 * runs.
 */
import type { Logger } from 'pino';
import type { ToolCallReceiptKey } from '../core/identity.js';
import { FencedOutError, type AttemptFence } from '../redis/errors.js';
import type { ReceiptStore } from '../redis/receipts/store.js';

/**
 * Extends a receipt lease while a tool runs: every third of the lease, so two
 * heartbeats can be lost before the lease lapses. When the store answers that
 * another attempt owns the receipt, it calls `onFencedOut` once and stops.
 * Other errors (Redis briefly unreachable) are logged and retried on the next
 * tick; if the lease lapses meanwhile, the next heartbeat learns the outcome.
 * A heartbeat that finds the attempt already reported ambiguous (contested)
 * still extends the lease, and is logged once as a warning: the attempt goes
 * on, and its settle will be recorded as late.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private contestedLogged = false;

  constructor(
    private readonly store: ReceiptStore,
    private readonly key: ToolCallReceiptKey,
    private readonly fence: AttemptFence,
    private readonly leaseMs: number,
    /** The call's logger, made only when a heartbeat has something to say. */
    private readonly logger: () => Logger,
    private readonly onFencedOut: (error: FencedOutError) => void,
  ) {}

  start(): this {
    const every = Math.max(10, Math.floor(this.leaseMs / 3));
    this.timer = setInterval(() => void this.beat(), every);
    this.timer.unref();
    return this;
  }

  /** Stop beating. A heartbeat already in flight may still land; its answer is ignored. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  private async beat(): Promise<void> {
    try {
      const beat = await this.store.heartbeat(this.key, this.fence, this.leaseMs);
      if (beat.contested && !this.contestedLogged && !this.stopped) {
        this.contestedLogged = true;
        this.logger().warn(
          { attempt: this.fence.attempt },
          'a claim already reported this attempt ambiguous; it goes on, and its settle will be recorded as late',
        );
      }
    } catch (error) {
      if (this.stopped) return;
      if (error instanceof FencedOutError) {
        this.stop();
        this.onFencedOut(error);
        return;
      }
      this.logger().warn({ err: error, attempt: this.fence.attempt }, 'receipt heartbeat failed; will retry');
    }
  }
}
