/** The quota state an answer reports, read from its rate-limit headers (docs/api.md, "Rate limits"). */
export interface RateLimitWindow {
  /** `minute` or `day` (the service's window names). */
  name: string;
  /** The window's quota (`q`), when the answer carried `RateLimit-Policy`. */
  limit: number | undefined;
  /** Requests left in the window (`r`). */
  remaining: number;
  /** Milliseconds until the window resets (`t`), from when the answer arrived. */
  resetMs: number;
}

export interface RateLimitState {
  /** `X-RateLimit-Limit`: the quota of the window nearest exhaustion. */
  limit: number;
  /** `X-RateLimit-Remaining`. */
  remaining: number;
  /** `X-RateLimit-Reset`: when that window resets (or a ban ends), as a Date. */
  reset: Date;
  /** Every window, from the IETF draft's `RateLimit` and `RateLimit-Policy` fields. */
  windows: RateLimitWindow[];
}

function integer(value: string | null): number | undefined {
  if (value === null || !/^\s*\d+\s*$/.test(value)) return undefined;
  return Number(value);
}

/**
 * Parameters of one structured-field list: `"minute";r=59;t=42, "day";r=999;t=3600`. The service writes only
 * this simple form (quoted names, integer parameters), so a small parser suffices here; a full RFC 8941
 * parser would be a dependency for every browser bundle.
 */
function parseList(value: string | null): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>();
  if (!value) return out;
  for (const member of value.split(',')) {
    const [name, ...params] = member.trim().split(';');
    if (!name) continue;
    const entry: Record<string, number> = {};
    for (const param of params) {
      const [key, raw] = param.trim().split('=');
      const n = integer(raw ?? null);
      if (key && n !== undefined) entry[key] = n;
    }
    out.set(name.replace(/^"|"$/g, ''), entry);
  }
  return out;
}

export function parseRateLimit(headers: Headers): RateLimitState | undefined {
  const limit = integer(headers.get('x-ratelimit-limit'));
  const remaining = integer(headers.get('x-ratelimit-remaining'));
  const reset = integer(headers.get('x-ratelimit-reset'));
  if (limit === undefined || remaining === undefined || reset === undefined) return undefined;
  const policy = parseList(headers.get('ratelimit-policy'));
  const windows: RateLimitWindow[] = [];
  for (const [name, state] of parseList(headers.get('ratelimit'))) {
    if (state.r === undefined || state.t === undefined) continue;
    windows.push({ name, limit: policy.get(name)?.q, remaining: state.r, resetMs: state.t * 1000 });
  }
  return { limit, remaining, reset: new Date(reset * 1000), windows };
}

/** `Retry-After` in milliseconds from `now`: delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const seconds = integer(value);
  if (seconds !== undefined) return seconds * 1000;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
