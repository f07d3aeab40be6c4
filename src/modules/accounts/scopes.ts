/**
 * How a key's scopes are stored. The vocabulary and its implications are declared by the modules that own
 * them and collected in src/modules/scopes.ts.
 */
import { effectiveScopes, isScope, type Scope } from '../scopes.js';

export { effectiveScopes, isScope, allScopes, type Scope } from '../scopes.js';

/** Storage form: space-separated as in OAuth, `null` for every scope. */
export function formatScopes(granted: readonly Scope[] | null): string | null {
  return granted === null ? null : [...new Set(granted)].join(' ');
}

/** Reads the storage form back; names this release does not know are ignored (fail closed). */
export function parseScopes(stored: string | null): Scope[] | null {
  if (stored === null) return null;
  return stored.split(' ').filter(isScope);
}

/** What a set of keys (their stored scope lists) may use together. */
function unionScopes(stored: readonly (string | null)[]): Set<Scope> {
  const all = new Set<Scope>();
  for (const scopes of stored) for (const scope of effectiveScopes(parseScopes(scopes))) all.add(scope);
  return all;
}

/** Each account's union of its keys' scopes (rows of account id and stored scopes); none: the empty set. */
export function scopesByAccount(
  accountIds: readonly number[],
  keys: readonly { accountId: number; scopes: string | null }[],
): Map<number, ReadonlySet<Scope>> {
  return new Map(
    accountIds.map((id) => [id, unionScopes(keys.filter((k) => k.accountId === id).map((k) => k.scopes))]),
  );
}
