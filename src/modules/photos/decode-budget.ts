/**
 * The process's memory budget for decoding images. Each decode holds a share sized by what its header
 * says it may cost; a decode that does not fit waits its turn (first come, first served, so a large image
 * is not starved by small ones) for a bounded time in a bounded queue, and is refused past either bound:
 * the route answers `503 overloaded` with `Retry-After` instead of the process running out of memory.
 */
import { ApiError } from '../../http/errors.js';

interface Waiter {
  cost: number;
  grant: () => void;
  timer: NodeJS.Timeout;
}

export class DecodeBudget {
  private used = 0;
  private readonly queue: Waiter[] = [];

  /**
   * @param total bytes the decodes in flight may hold together.
   * @param maxWaitMs how long a decode waits for room before it is refused.
   * @param maxQueue how many decodes may wait at once; the next is refused at once.
   */
  constructor(
    readonly total: number,
    readonly maxWaitMs: number,
    readonly maxQueue: number,
  ) {}

  /** Bytes held by the decodes in flight. */
  get inUse(): number {
    return this.used;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Holds `cost` bytes (at most the whole budget: an image dearer than the budget runs alone) until the
   * returned release is called; rejects with `503 overloaded` when there is no room within the bounds.
   */
  acquire(cost: number): Promise<() => void> {
    const share = Math.min(Math.max(1, Math.ceil(cost)), this.total);
    if (this.queue.length === 0 && this.used + share <= this.total) {
      this.used += share;
      return Promise.resolve(this.releaser(share));
    }
    if (this.queue.length >= this.maxQueue || this.maxWaitMs === 0) return Promise.reject(busy(1));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        cost: share,
        grant: () => {
          clearTimeout(waiter.timer);
          resolve(this.releaser(share));
        },
        timer: setTimeout(() => {
          this.queue.splice(this.queue.indexOf(waiter), 1);
          reject(busy(Math.max(1, Math.ceil(this.maxWaitMs / 1000))));
          // The head may have left: those behind it may fit now.
          this.drain();
        }, this.maxWaitMs),
      };
      this.queue.push(waiter);
    });
  }

  private releaser(share: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= share;
      this.drain();
    };
  }

  private drain(): void {
    while (this.queue.length > 0 && this.used + this.queue[0]!.cost <= this.total) {
      const next = this.queue.shift()!;
      this.used += next.cost;
      next.grant();
    }
  }
}

function busy(retryAfter: number): ApiError {
  return new ApiError('overloaded', {
    message:
      'This instance is decoding as many images as its memory budget allows; nothing was stored. ' +
      'Retry after the time in Retry-After.',
    headers: { 'retry-after': String(retryAfter) },
  });
}
