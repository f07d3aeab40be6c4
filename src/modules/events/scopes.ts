/** The scopes the events module's routes require (its `scopes`), collected by src/modules/scopes.ts. */
import type { ScopeDeclaration } from '../module.js';

export const eventScopes: readonly ScopeDeclaration[] = [
  { name: 'events:read', description: "the account's event feed" },
];
