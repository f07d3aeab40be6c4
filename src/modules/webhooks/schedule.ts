/** The retry schedule (docs/api.md, "Webhooks"): after the n-th failed attempt, wait RETRY_DELAYS_MS[n-1] ± 20 %. */
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
export const RETRY_DELAYS_MS = [
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  10 * HOUR,
  10 * HOUR,
];
export const JITTER = 0.2;
/** An endpoint whose deliveries fail without a success for this long is disabled. */
export const DISABLE_AFTER_MS = 3 * 24 * HOUR;
/** A receiver's Retry-After is honoured up to this far ahead; beyond, it would outlive the endpoint's streak. */
export const MAX_RETRY_AFTER_MS = 24 * HOUR;

/** Retry-After as seconds or an HTTP date, as epoch ms; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return now + Number(trimmed) * SECOND;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : date;
}

/**
 * When to try again after `attempts` failed attempts (this one included), or null when the schedule is done.
 * The receiver's Retry-After wins when it asks for later than the schedule would.
 */
export function nextAttemptAt(
  attempts: number,
  now: number,
  retryAfter: string | undefined,
  random: () => number = Math.random,
): number | null {
  const base = RETRY_DELAYS_MS[attempts - 1];
  if (base === undefined) return null;
  const scheduled = now + Math.round(base * (1 - JITTER + 2 * JITTER * random()));
  const asked = parseRetryAfter(retryAfter, now);
  if (asked === undefined || asked <= scheduled) return scheduled;
  return Math.min(asked, now + MAX_RETRY_AFTER_MS);
}
