/** An account's per-minute quota, the same rule on every backend. */

export function quotaFor(
  plan: Plan,
  perMinute?: number,
  perDay?: number,
): { perMinute: number; perDay: number } {
  if (plan === 'enterprise') {
    return {
      perMinute: perMinute ?? PLAN_QUOTAS.business.perMinute,
      perDay: perDay ?? PLAN_QUOTAS.business.perDay,
    };
  }
  return PLAN_QUOTAS[plan];
}

export const PLANS = ['free', 'pro', 'business', 'enterprise'] as const;

export type Plan = (typeof PLANS)[number];

/** Quotas of the fixed plans; enterprise accounts carry their own numbers. */
export const PLAN_QUOTAS: Record<Exclude<Plan, 'enterprise'>, { perMinute: number; perDay: number }> = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 },
};
