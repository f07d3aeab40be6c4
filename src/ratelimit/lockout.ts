import type { RateLimiter } from './limiter.js';

const MINUTE_MS = 60_000;
/** Bounds the memory a flood of guessing addresses can take; beyond it the oldest lockouts go first. */
const MAX_LOCKED_ADDRESSES = 100_000;

/**
 * Failed-authentication lockout (docs/api.md, "Rate limits"): an address that sends more than `perMinute` invalid keys in a
 * UTC minute gets 429 for every request carrying a key until that minute ends, without any key lookup, so a
 * correct guess cannot be told apart from a wrong one and guessing is bounded by `perMinute`, not by the
 * service's speed.
 *
 * Failures are counted in the shared counter store (Redis when scaled out), so the threshold holds across
 * instances. The lockout itself is remembered in this process: checking it costs no store round trip on the
 * hot path. Another instance learns of it on its own next failure from that address, so across N instances at
 * most N − 1 further guesses are judged in the minute.
 */
export class AuthFailureLockout {
  /** Address → epoch ms its lockout ends. Insertion order is expiry order (one minute each). */
  private readonly lockedUntil = new Map<string, number>();

  constructor(
    private readonly limiter: RateLimiter,
    private readonly perMinute: number,
  ) {}

  isLockedOut(address: string, now: number): boolean {
    const until = this.lockedUntil.get(address);
    if (until === undefined) return false;
    if (until > now) return true;
    this.lockedUntil.delete(address);
    return false;
  }

  /** Counts one invalid key from `address`; resolves false when that made it exceed the threshold. */
  async recordFailure(address: string, now: number): Promise<boolean> {
    const decision = await this.limiter.check(`authfail:${address}`, { perMinute: this.perMinute }, now);
    if (decision.allowed) return true;
    this.lock(address, now);
    return false;
  }

  /** Whole seconds (≥ 1) until the current minute, and so any lockout set in it, ends. */
  retryAfterSeconds(now: number): number {
    return Math.max(1, Math.ceil((minuteEnd(now) - now) / 1000));
  }

  private lock(address: string, now: number): void {
    this.lockedUntil.delete(address);
    this.lockedUntil.set(address, minuteEnd(now));
    if (this.lockedUntil.size <= MAX_LOCKED_ADDRESSES) return;
    for (const [oldest, until] of this.lockedUntil) {
      if (this.lockedUntil.size <= MAX_LOCKED_ADDRESSES && until > now) break;
      this.lockedUntil.delete(oldest);
    }
  }
}

function minuteEnd(now: number): number {
  return now - (now % MINUTE_MS) + MINUTE_MS;
}
