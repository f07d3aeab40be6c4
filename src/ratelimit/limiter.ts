import type { CounterStore } from './store.js';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

export interface Quota {
  perMinute: number;
  /** Omitted: only the minute window applies (the unauthenticated bucket). */
  perDay?: number;
}

export interface WindowState {
  name: 'minute' | 'day';
  limit: number;
  remaining: number;
  /** Epoch ms when this window resets. */
  resetAt: number;
  windowSeconds: number;
}

export interface Decision {
  allowed: boolean;
  reason?: 'rate_limited' | 'temporarily_banned';
  windows: WindowState[];
  /** The window nearest exhaustion, which the X-RateLimit-* headers describe. */
  headline: WindowState;
  /** Whole seconds, ≥ 1, when rejected. */
  retryAfter?: number;
  /** This request started a ban, or found one lifted (see ConsumeResult.event). */
  event?: 'banned' | 'unbanned';
  /** Epoch ms the ban ends, when banned. */
  bannedUntil?: number;
}

export interface LimiterOptions {
  banThresholdFactor: number;
  banSeconds: number;
}

/**
 * The rate-limit policy: two fixed windows aligned to UTC (minute and day), checked together; a ban for
 * subjects that keep hammering while limited. The store does the atomic counting; this computes window
 * keys and what the headers say.
 */
export class RateLimiter {
  constructor(
    private readonly store: CounterStore,
    private readonly options: LimiterOptions,
  ) {}

  async check(
    subject: string,
    quota: Quota,
    now: number,
    banLiftedAt: number | null = null,
  ): Promise<Decision> {
    const minuteStart = now - (now % MINUTE_MS);
    const dayStart = now - (now % DAY_MS);
    const specs: { name: 'minute' | 'day'; limit: number; start: number; length: number }[] = [
      { name: 'minute', limit: quota.perMinute, start: minuteStart, length: MINUTE_MS },
    ];
    if (quota.perDay !== undefined)
      specs.push({ name: 'day', limit: quota.perDay, start: dayStart, length: DAY_MS });

    const result = await this.store.consume({
      subject,
      windows: specs.map((s) => ({
        id: `${s.name[0]}:${s.start}`,
        limit: s.limit,
        // Outlive the window by a full length so a frozen test clock never sees a counter vanish early.
        ttlMs: s.start + 2 * s.length - now,
      })),
      rejectedId: `x:${minuteStart}`,
      banThreshold: quota.perDay === undefined ? Infinity : quota.perMinute * this.options.banThresholdFactor,
      banMs: this.options.banSeconds * 1000,
      now,
      banLiftedAt,
    });

    const windows: WindowState[] = specs.map((s, i) => ({
      name: s.name,
      limit: s.limit,
      remaining: Math.max(0, s.limit - result.counts[i]!),
      resetAt: s.start + s.length,
      windowSeconds: s.length / 1000,
    }));

    if (result.bannedUntil !== null) {
      const headline: WindowState = { ...windows[0]!, remaining: 0, resetAt: result.bannedUntil };
      return {
        allowed: false,
        reason: 'temporarily_banned',
        windows,
        headline,
        retryAfter: secondsUntil(result.bannedUntil, now),
        bannedUntil: result.bannedUntil,
        ...(result.event ? { event: result.event } : {}),
      };
    }

    if (result.allowed) {
      const decision: Decision = { allowed: true, windows, headline: nearestExhaustion(windows) };
      if (result.event) decision.event = result.event;
      return decision;
    }

    // The request can succeed only once every exhausted window has reset: report the latest of those.
    const exhausted = windows.filter((w) => w.remaining === 0);
    const headline = exhausted.reduce((a, b) => (b.resetAt > a.resetAt ? b : a));
    return {
      allowed: false,
      reason: 'rate_limited',
      windows,
      headline,
      retryAfter: secondsUntil(headline.resetAt, now),
      ...(result.event ? { event: result.event } : {}),
    };
  }
}

function nearestExhaustion(windows: WindowState[]): WindowState {
  return windows.reduce((a, b) => (b.remaining < a.remaining ? b : a));
}

function secondsUntil(at: number, now: number): number {
  return Math.max(1, Math.ceil((at - now) / 1000));
}

/**
 * Header values for a decision: the classic X-RateLimit-* trio for the headline window, and the IETF
 * draft's structured `RateLimit-Policy` / `RateLimit` fields for every window.
 */
export function rateLimitHeaders(decision: Decision, now: number): Record<string, string> {
  const h = decision.headline;
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(h.limit),
    'x-ratelimit-remaining': String(h.remaining),
    'x-ratelimit-reset': String(Math.ceil(h.resetAt / 1000)),
    'ratelimit-policy': decision.windows
      .map((w) => `"${w.name}";q=${w.limit};w=${w.windowSeconds}`)
      .join(', '),
    ratelimit: decision.windows
      .map((w) => `"${w.name}";r=${w.remaining};t=${Math.max(0, Math.ceil((w.resetAt - now) / 1000))}`)
      .join(', '),
  };
  if (decision.retryAfter !== undefined) headers['retry-after'] = String(decision.retryAfter);
  return headers;
}
