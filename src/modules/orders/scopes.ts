/** The scopes the orders module's routes require (its `scopes`), collected by src/modules/scopes.ts. */
import type { ScopeDeclaration } from '../module.js';

export const orderScopes: readonly ScopeDeclaration[] = [
  { name: 'orders:read', description: "read the account's own orders" },
  {
    name: 'orders:write',
    description: "place orders and cancel the account's own orders",
    implies: ['orders:read'],
  },
  {
    name: 'orders:manage',
    description: "every account's orders: list, read, approve, deliver and cancel them",
    implies: ['orders:read', 'orders:write'],
  },
];
