/**
 * Key scopes (DESIGN 4.1). A key stores the scopes it was given (`null`: every scope, present and future);
 * what it may do is the expansion of those by the implications below, computed once when the key is loaded.
 */
export const SCOPES = [
  'pets:read',
  'pets:write',
  'orders:read',
  'orders:write',
  'orders:manage',
  'events:read',
  'webhooks:write',
] as const;
export type Scope = (typeof SCOPES)[number];

/** `write` implies `read` of the same resource; `orders:manage` implies reading and writing orders. */
const IMPLIES: Partial<Record<Scope, readonly Scope[]>> = {
  'pets:write': ['pets:read'],
  'orders:write': ['orders:read'],
  'orders:manage': ['orders:read', 'orders:write'],
};

const ALL: ReadonlySet<Scope> = new Set(SCOPES);

export function isScope(value: string): value is Scope {
  return (ALL as ReadonlySet<string>).has(value);
}

/** The scopes a key stored as `granted` (`null`: all) may use. */
export function effectiveScopes(granted: readonly Scope[] | null): ReadonlySet<Scope> {
  if (granted === null) return ALL;
  const scopes = new Set<Scope>();
  for (const scope of granted) {
    scopes.add(scope);
    for (const implied of IMPLIES[scope] ?? []) scopes.add(implied);
  }
  return scopes;
}

/** Storage form: space-separated as in OAuth, `null` for every scope. */
export function formatScopes(granted: readonly Scope[] | null): string | null {
  return granted === null ? null : [...new Set(granted)].join(' ');
}

/** Reads the storage form back; names this release does not know are ignored (fail closed). */
export function parseScopes(stored: string | null): Scope[] | null {
  if (stored === null) return null;
  return stored.split(' ').filter(isScope);
}
