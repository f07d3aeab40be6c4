/** The scopes the webhooks module's routes require (its `scopes`), collected by src/modules/scopes.ts. */
import type { ScopeDeclaration } from '../module.js';

export const webhookScopes: readonly ScopeDeclaration[] = [
  { name: 'webhooks:write', description: "manage the account's own webhook endpoints" },
];
