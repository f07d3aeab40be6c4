/** The event feed's filters, written once for both backends' SQL. */
import type { ListEventsQuery } from './repository.js';

/** The filters of a feed query, shared by both backends' SQL (placeholders are the backend's). */
export function feedConditions(
  query: ListEventsQuery,
  placeholder: (n: number) => string,
  order: 'seq' | 'position' = 'seq',
): { where: string; values: (string | number)[] } {
  const values: (string | number)[] = [query.afterSeq ?? 0];
  const where = [`${order} > ${placeholder(1)}`];
  if (query.type !== undefined) {
    values.push(query.type);
    where.push(`type = ${placeholder(values.length)}`);
  }
  if (!query.viewer.allOrders) {
    values.push(query.viewer.accountId);
    where.push(`(account_id IS NULL OR account_id = ${placeholder(values.length)})`);
  }
  values.push(query.limit);
  return { where: `${where.join(' AND ')} ORDER BY ${order} LIMIT ${placeholder(values.length)}`, values };
}
