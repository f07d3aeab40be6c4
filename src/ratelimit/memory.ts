import type { ConsumeRequest, ConsumeResult, CounterStore } from './store.js';

interface Entry {
  value: number;
  /** Real (not injected) time after which the entry is garbage. */
  expiresAt: number;
}

interface Ban {
  since: number;
  until: number;
  expiresAt: number;
}

/**
 * In-process counters. Written by hand rather than with rate-limiter-flexible's memory limiter because the
 * contract needs two windows checked and incremented together, and rejected requests not counted; the
 * library's `consume` increments before it decides. Node runs `consume` to completion without yielding, so
 * it is atomic for free. A sweep evicts expired windows so memory tracks active subjects, not history.
 */
export class MemoryCounterStore implements CounterStore {
  readonly kind = 'memory' as const;
  private readonly counters = new Map<string, Entry>();
  private readonly bans = new Map<string, Ban>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(sweepEveryMs = 10_000) {
    this.sweeper = setInterval(() => this.sweep(), sweepEveryMs);
    this.sweeper.unref();
  }

  private read(key: string, realNow: number): number {
    const entry = this.counters.get(key);
    if (!entry) return 0;
    if (entry.expiresAt <= realNow) {
      this.counters.delete(key);
      return 0;
    }
    return entry.value;
  }

  private increment(key: string, ttlMs: number, realNow: number): number {
    const entry = this.counters.get(key);
    if (entry && entry.expiresAt > realNow) return ++entry.value;
    this.counters.set(key, { value: 1, expiresAt: realNow + ttlMs });
    return 1;
  }

  consumeNow(request: ConsumeRequest): ConsumeResult {
    const realNow = Date.now();
    const { subject, windows, now } = request;
    const ban = this.bans.get(subject);
    if (ban) {
      const lifted = request.banLiftedAt !== null && request.banLiftedAt >= ban.since;
      if (lifted || ban.until <= now || ban.expiresAt <= realNow) {
        this.bans.delete(subject);
        if (lifted) this.counters.delete(`${subject}|${request.rejectedId}`);
      } else {
        return {
          allowed: false,
          counts: windows.map((w) => this.read(`${subject}|${w.id}`, realNow)),
          bannedUntil: ban.until,
        };
      }
    }
    // Hot path: build each window's key once and look it up once; the increments below reuse the entries.
    const n = windows.length;
    const keys = new Array<string>(n);
    const entries = new Array<Entry | undefined>(n);
    const counts = new Array<number>(n);
    let allowed = true;
    for (let i = 0; i < n; i++) {
      const window = windows[i]!;
      const key = `${subject}|${window.id}`;
      let entry = this.counters.get(key);
      if (entry !== undefined && entry.expiresAt <= realNow) {
        this.counters.delete(key);
        entry = undefined;
      }
      keys[i] = key;
      entries[i] = entry;
      counts[i] = entry === undefined ? 0 : entry.value;
      if (counts[i]! >= window.limit) allowed = false;
    }
    if (allowed) {
      for (let i = 0; i < n; i++) {
        const entry = entries[i];
        if (entry !== undefined) counts[i] = ++entry.value;
        else {
          this.counters.set(keys[i]!, { value: 1, expiresAt: realNow + windows[i]!.ttlMs });
          counts[i] = 1;
        }
      }
      return { allowed, counts, bannedUntil: null };
    }
    const rejected = this.increment(`${subject}|${request.rejectedId}`, 60_000, realNow);
    if (rejected > request.banThreshold) {
      const until = now + request.banMs;
      this.bans.set(subject, { since: now, until, expiresAt: realNow + request.banMs });
      return { allowed, counts, bannedUntil: until };
    }
    return { allowed, counts, bannedUntil: null };
  }

  consume(request: ConsumeRequest): Promise<ConsumeResult> {
    return Promise.resolve(this.consumeNow(request));
  }

  healthy(): boolean {
    return true;
  }

  /** Entries currently held; for tests and the memory benchmark. */
  size(): number {
    return this.counters.size + this.bans.size;
  }

  sweep(realNow = Date.now()): void {
    for (const [key, entry] of this.counters) if (entry.expiresAt <= realNow) this.counters.delete(key);
    for (const [key, ban] of this.bans) if (ban.expiresAt <= realNow) this.bans.delete(key);
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    return Promise.resolve();
  }
}
