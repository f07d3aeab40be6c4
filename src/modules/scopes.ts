/**
 * The scope vocabulary, collected from the modules that declare it (ApiModule.scopes), in module order. A key
 * stores the scopes it was given (`null`: every scope, present and future); what it may do is the expansion
 * of those by the declared implications, computed once when the key is loaded.
 */
import { MODULES } from './index.js';
import type { ScopeDeclaration } from './module.js';

/** A scope's name; any module may declare new ones, so names are checked at run time (isScope). */
export type Scope = string;

const DECLARED: readonly ScopeDeclaration[] = MODULES.flatMap((module) => module.scopes ?? []);

export const SCOPES: readonly Scope[] = DECLARED.map((scope) => scope.name);

const IMPLIES: ReadonlyMap<Scope, readonly Scope[]> = new Map(
  DECLARED.map((scope) => [scope.name, scope.implies ?? []]),
);

const ALL: ReadonlySet<Scope> = new Set(SCOPES);

export function isScope(value: string): value is Scope {
  return ALL.has(value);
}

/** The scopes a key stored as `granted` (`null`: all) may use. */
export function effectiveScopes(granted: readonly Scope[] | null): ReadonlySet<Scope> {
  if (granted === null) return ALL;
  const scopes = new Set<Scope>();
  for (const scope of granted) {
    scopes.add(scope);
    for (const implied of IMPLIES.get(scope) ?? []) scopes.add(implied);
  }
  return scopes;
}

/** Each scope with what it allows and the other scopes that grant it, for the OpenAPI document. */
export function scopeCatalogue(): { name: Scope; description: string; grantedBy: Scope[] }[] {
  return DECLARED.map(({ name, description }) => ({
    name,
    description,
    grantedBy: SCOPES.filter((other) => other !== name && effectiveScopes([other]).has(name)),
  }));
}
