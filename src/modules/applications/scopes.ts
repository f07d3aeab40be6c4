/** The scopes the applications module's routes require (its `scopes`), collected by src/modules/scopes.ts. */
import type { ScopeDeclaration } from '../module.js';

export const applicationScopes: readonly ScopeDeclaration[] = [
  { name: 'applications:read', description: "read the account's own applications and the form" },
  {
    name: 'applications:write',
    description: "submit applications, change and withdraw the account's own",
    implies: ['applications:read'],
  },
  {
    name: 'applications:manage',
    description: "every account's applications and applicants, the form and every action",
    implies: ['applications:read', 'applications:write'],
  },
];
