/** Keys narrowed for scope tests (docs/api.md, "Scopes"). */
import { effectiveScopes, isScope, allScopes, type Scope } from '../../src/modules/accounts/scopes.js';

/**
 * The widest grant that still lacks every scope of `needed`: all scopes except those named and those
 * implying one of them (`pets:write` implies `pets:read`, so a key without `pets:read` lacks it too).
 */
export function scopesLacking(needed: readonly Scope[]): Scope[] {
  return allScopes().filter((scope) => !needed.some((n) => effectiveScopes([scope]).has(n)));
}

/** The scopes an OpenAPI operation's `security` requirement names for the bearer scheme; fails on a name outside the vocabulary. */
export function declaredScopes(security: readonly Record<string, readonly string[]>[]): Scope[] {
  const names = [...new Set(security.flatMap((requirement) => requirement.bearerAuth ?? []))];
  for (const name of names) if (!isScope(name)) throw new Error(`"${name}" is not a scope`);
  return names as Scope[];
}
