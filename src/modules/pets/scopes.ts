/** The scopes the pets module's routes require (its `scopes`), collected by src/modules/scopes.ts. */
import type { ScopeDeclaration } from '../module.js';

export const petScopes: readonly ScopeDeclaration[] = [
  { name: 'pets:read', description: 'read the animals, their categories and the inventory' },
  { name: 'pets:write', description: 'add, change and remove animals', implies: ['pets:read'] },
];
