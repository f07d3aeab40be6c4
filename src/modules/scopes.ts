/**
 * The scope vocabulary, collected from the modules that declare it (ApiModule.scopes), in module order. A key
 * stores the scopes it was given (`null`: every scope, present and future); what it may do is the expansion
 * of those by the declared implications, computed once when the key is loaded.
 */
import { MODULES } from './index.js';
import type { ScopeDeclaration } from './module.js';

/** A scope's name; any module may declare new ones, so names are checked at run time (isScope). */
export type Scope = string;

interface Vocabulary {
  declared: readonly ScopeDeclaration[];
  names: readonly Scope[];
  implies: ReadonlyMap<Scope, readonly Scope[]>;
  all: ReadonlySet<Scope>;
}

let vocabulary: Vocabulary | undefined;

/**
 * Built on first use, not when this file is evaluated: modules import the scope helpers (webhooks checks what
 * keys may read), so this file can be evaluated while the module list it reads is still being loaded.
 */
function vocabularyNow(): Vocabulary {
  if (vocabulary) return vocabulary;
  const declared = MODULES.flatMap((module) => module.scopes ?? []);
  const names = declared.map((scope) => scope.name);
  vocabulary = {
    declared,
    names,
    implies: new Map(declared.map((scope) => [scope.name, scope.implies ?? []])),
    all: new Set(names),
  };
  return vocabulary;
}

/** Every declared scope, in module order. */
export function allScopes(): readonly Scope[] {
  return vocabularyNow().names;
}

export function isScope(value: string): value is Scope {
  return vocabularyNow().all.has(value);
}

/** The scopes a key stored as `granted` (`null`: all) may use. */
export function effectiveScopes(granted: readonly Scope[] | null): ReadonlySet<Scope> {
  const { all, implies } = vocabularyNow();
  if (granted === null) return all;
  const scopes = new Set<Scope>();
  for (const scope of granted) {
    scopes.add(scope);
    for (const implied of implies.get(scope) ?? []) scopes.add(implied);
  }
  return scopes;
}

/** Each scope with what it allows and the other scopes that grant it, for the OpenAPI document. */
export function scopeCatalogue(): { name: Scope; description: string; grantedBy: Scope[] }[] {
  const { declared, names } = vocabularyNow();
  return declared.map(({ name, description }) => ({
    name,
    description,
    grantedBy: names.filter((other) => other !== name && effectiveScopes([other]).has(name)),
  }));
}
