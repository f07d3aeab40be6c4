import type { ConsumeRequest, ConsumeResult, CounterStore } from './store.js';

interface Entry {
  value: number;
  /**
   * How much of `value` Redis is known to hold. Only the Redis store's fallback uses it: `value - synced`
   * is what was counted here during an outage and is handed back to Redis when it returns.
   */
  synced: number;
  /** Real (not injected) time after which the entry is garbage. */
  expiresAt: number;
}

interface Ban {
  since: number;
  until: number;
  expiresAt: number;
  /** False for a ban set here during a Redis outage, which Redis has not heard of yet. */
  synced: boolean;
}

/** A count taken during a Redis outage that Redis does not hold yet. */
export interface PendingCount {
  subject: string;
  /** The window (or rejected-counter) id, as in the ConsumeRequest. */
  id: string;
  /** Counted here since Redis last answered for this key. */
  delta: number;
  /** This instance's whole count: Redis' last answer plus `delta`, a floor for Redis' total. */
  value: number;
  ttlMs: number;
}

export interface PendingBan {
  subject: string;
  since: number;
  until: number;
  ttlMs: number;
}

/**
 * In-process counters. Written by hand rather than with rate-limiter-flexible's memory limiter because the
 * contract needs two windows checked and incremented together, and rejected requests not counted; the
 * library's `consume` increments before it decides. Node runs `consume` to completion without yielding, so
 * it is atomic for free. A sweep evicts expired windows so memory tracks active subjects, not history.
 */
export class MemoryCounterStore implements CounterStore {
  readonly kind = 'memory' as const;
  readonly commandsSent = 0;
  private readonly counters = new Map<string, Entry>();
  private readonly bans = new Map<string, Ban>();
  private readonly sweeper: NodeJS.Timeout;

  /**
   * `realClock` tells expiry time (it is the real clock in production; tests inject one to cross TTLs
   * without sleeping); the limiter's own `now`, carried in each request, decides windows and bans.
   */
  constructor(
    sweepEveryMs = 10_000,
    private readonly realClock: () => number = Date.now,
  ) {
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
    this.counters.set(key, { value: 1, synced: 0, expiresAt: realNow + ttlMs });
    return 1;
  }

  consumeNow(request: ConsumeRequest): ConsumeResult {
    const realNow = this.realClock();
    const { subject, windows, now } = request;
    const ban = this.bans.get(subject);
    let unbanned = false;
    if (ban) {
      const lifted = request.banLiftedAt !== null && request.banLiftedAt >= ban.since;
      if (lifted || ban.until <= now || ban.expiresAt <= realNow) {
        this.bans.delete(subject);
        if (lifted) this.counters.delete(`${subject}|${request.rejectedId}`);
        unbanned = lifted && ban.until > now;
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
          this.counters.set(keys[i]!, { value: 1, synced: 0, expiresAt: realNow + windows[i]!.ttlMs });
          counts[i] = 1;
        }
      }
      return unbanned
        ? { allowed, counts, bannedUntil: null, event: 'unbanned' }
        : { allowed, counts, bannedUntil: null };
    }
    const rejected = this.increment(`${subject}|${request.rejectedId}`, 60_000, realNow);
    if (rejected > request.banThreshold) {
      const until = now + request.banMs;
      this.bans.set(subject, { since: now, until, expiresAt: realNow + request.banMs, synced: false });
      return { allowed, counts, bannedUntil: until, event: 'banned' };
    }
    return unbanned
      ? { allowed, counts, bannedUntil: null, event: 'unbanned' }
      : { allowed, counts, bannedUntil: null };
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

  /**
   * Records what Redis answered for a request, so that an outage starts counting from Redis' last counts
   * instead of from zero (the Redis store's fallback calls this after every answer). Counts only grow within
   * a window, so a late answer never lowers what an earlier one reported.
   */
  observe(request: ConsumeRequest, result: ConsumeResult): void {
    const realNow = this.realClock();
    for (let i = 0; i < request.windows.length; i++) {
      const window = request.windows[i]!;
      const count = result.counts[i]!;
      const key = `${request.subject}|${window.id}`;
      const entry = this.counters.get(key);
      if (entry !== undefined && entry.expiresAt > realNow) {
        if (count > entry.synced) {
          entry.value += count - entry.synced;
          entry.synced = count;
        }
      } else {
        this.counters.set(key, { value: count, synced: count, expiresAt: realNow + window.ttlMs });
      }
    }
    if (result.bannedUntil === null) {
      if (this.bans.get(request.subject)?.synced) this.bans.delete(request.subject);
    } else if (!this.bans.has(request.subject)) {
      const ttlMs = result.bannedUntil - request.now;
      this.bans.set(request.subject, {
        since: request.now,
        until: result.bannedUntil,
        expiresAt: realNow + ttlMs,
        synced: true,
      });
    }
  }

  /** Counts taken here that Redis does not hold yet, for windows that have not expired. */
  pendingCounts(): PendingCount[] {
    const realNow = this.realClock();
    const pending: PendingCount[] = [];
    for (const [key, entry] of this.counters) {
      if (entry.value <= entry.synced || entry.expiresAt <= realNow) continue;
      // Window ids never contain `|`; subjects might, so split at the last one.
      const bar = key.lastIndexOf('|');
      pending.push({
        subject: key.slice(0, bar),
        id: key.slice(bar + 1),
        delta: entry.value - entry.synced,
        value: entry.value,
        ttlMs: entry.expiresAt - realNow,
      });
    }
    return pending;
  }

  /** Bans set here that Redis has not heard of. */
  pendingBans(): PendingBan[] {
    const realNow = this.realClock();
    const pending: PendingBan[] = [];
    for (const [subject, ban] of this.bans) {
      if (ban.synced || ban.expiresAt <= realNow) continue;
      pending.push({ subject, since: ban.since, until: ban.until, ttlMs: ban.expiresAt - realNow });
    }
    return pending;
  }

  /**
   * Redis has added `delta` of this count and now holds `total`. Whatever was counted here since the delta
   * was read stays pending, on top of Redis' total.
   */
  acknowledgeCount(subject: string, id: string, delta: number, total: number): void {
    const entry = this.counters.get(`${subject}|${id}`);
    if (entry === undefined) return;
    const stillPending = entry.value - (entry.synced + delta);
    entry.synced = Math.max(total, entry.synced + delta);
    entry.value = entry.synced + Math.max(0, stillPending);
  }

  acknowledgeBan(subject: string, until: number): void {
    const ban = this.bans.get(subject);
    if (ban !== undefined && ban.until === until) ban.synced = true;
  }

  sweep(realNow = this.realClock()): void {
    for (const [key, entry] of this.counters) if (entry.expiresAt <= realNow) this.counters.delete(key);
    for (const [key, ban] of this.bans) if (ban.expiresAt <= realNow) this.bans.delete(key);
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    return Promise.resolve();
  }
}
