/**
 * How a key's scopes are stored. The vocabulary and its implications are declared by the modules that own
 * them and collected in src/modules/scopes.ts.
 */
import { isScope, type Scope } from '../scopes.js';

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
