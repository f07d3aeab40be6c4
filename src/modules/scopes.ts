/**
 * The scope vocabulary, collected from the modules that declare it (each module's scopes.ts, its
 * `ApiModule.scopes`), in module order. A key stores the scopes it was given (`null`: every scope, present
 * and future); what it may do is the expansion of those by the declared implications, computed once when the
 * key is loaded. The declarations are pure data, so this file loads no module's routes: webhooks use these
 * helpers without a cycle through the module list (src/modules/index.ts checks the two lists agree).
 */
import { applicationScopes } from './applications/scopes.js';
import { eventScopes } from './events/scopes.js';
import type { Scope } from '../http/access.js';
import type { ScopeDeclaration } from './module.js';
import { orderScopes } from './orders/scopes.js';
import { petScopes } from './pets/scopes.js';
import { webhookScopes } from './webhooks/scopes.js';

/** Every module's scopes, in module order. */
export const MODULE_SCOPES: readonly ScopeDeclaration[] = [
  ...petScopes,
  ...orderScopes,
  ...applicationScopes,
  ...eventScopes,
  ...webhookScopes,
];

/** A scope's name: declared by the HTTP layer, which checks them and imports no module. */
export type { Scope };

interface Vocabulary {
  declared: readonly ScopeDeclaration[];
  names: readonly Scope[];
  implies: ReadonlyMap<Scope, readonly Scope[]>;
  all: ReadonlySet<Scope>;
}

const vocabulary: Vocabulary = (() => {
  const declared = MODULE_SCOPES;
  const names = declared.map((scope) => scope.name);
  return {
    declared,
    names,
    implies: new Map(declared.map((scope) => [scope.name, scope.implies ?? []])),
    all: new Set(names),
  };
})();

function vocabularyNow(): Vocabulary {
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
