/**
 * The order statuses and which of them are open, once: the schemas, the decisions and both backends' SQL
 * take them from here. A file of its own because schemas.ts loads the HTTP layer, which repositories and
 * decisions must not reach.
 */
export const ORDER_STATUSES = ['placed', 'approved', 'delivered', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

/** Statuses that hold the pet (and count against MAX_OPEN_ORDERS). */
export const OPEN_ORDER_STATUSES: readonly OrderStatus[] = ['placed', 'approved'];

export function isOpen(status: OrderStatus): boolean {
  return OPEN_ORDER_STATUSES.includes(status);
}

/**
 * `<column> IN (…the open statuses, quoted…)` as SQL, the one place SQL says which orders are open.
 * Literals, not a bound parameter: the partial indexes on open orders (migrations 006 and 007, whose
 * condition lists the same statuses) serve a query only when the planner can prove its condition implies
 * theirs, which it cannot from a parameter.
 */
export function openOrderSql(column = 'status'): string {
  return `${column} IN (${OPEN_ORDER_STATUSES.map((status) => `'${status}'`).join(', ')})`;
}
