/** One fixed window to check and count in. */
export interface WindowSpec {
  /** Key of this window instance, e.g. `m:29112345` (window name + window start); unique per subject. */
  id: string;
  limit: number;
  /** How long the counter must outlive now (ms): at least until the window ends. */
  ttlMs: number;
}

export interface ConsumeRequest {
  /** Who is counted: `a:<accountId>` or `ip:<address>`. */
  subject: string;
  /** Checked together: the request is allowed only if every window is below its limit. */
  windows: WindowSpec[];
  /** Key of the current minute, for counting rejected requests towards a ban. */
  rejectedId: string;
  /** Ban when rejected requests in the current minute exceed this; `Infinity`: never ban. */
  banThreshold: number;
  banMs: number;
  now: number;
  /** Bans set before this instant (epoch ms) are void, and the rejected count restarts. */
  banLiftedAt: number | null;
}

export interface ConsumeResult {
  allowed: boolean;
  /** Counter per window, in request order, after this request (unchanged when rejected). */
  counts: number[];
  /** Epoch ms the ban ends, when the subject is banned now. */
  bannedUntil: number | null;
  /**
   * Set on the one request that started a ban (`banned`) or found one lifted by `accounts unban`
   * (`unbanned`), so each is logged and counted once, across every instance sharing the store.
   */
  event?: 'banned' | 'unbanned';
}

/**
 * Counter store contract, implemented in memory and in Redis; test/ratelimit.test.ts runs the same
 * behaviour against both.
 *
 * `consume` is atomic per subject: it checks the ban, then every window; only when the subject is not banned
 * and every window is below its limit does it increment all windows (so rejected requests consume no quota,
 * and with N concurrent requests against a remaining quota R exactly R are allowed). A rejected request
 * instead increments the subject's rejected counter for the current minute; once that exceeds
 * `banThreshold`, the subject is banned until `now + banMs`. Counters expire on their own after `ttlMs`.
 * Times come from the caller's clock, never the store's, so tests can move time.
 */
export interface CounterStore {
  readonly kind: 'memory' | 'redis';
  /** Commands sent to a remote store so far (none for memory), for /metrics (see db/costs.ts). */
  readonly commandsSent: number;
  consume(request: ConsumeRequest): Promise<ConsumeResult>;
  /** True while the store is answering; a fallback wrapper reports degraded state through it. */
  healthy(): boolean;
  close(): Promise<void>;
}
