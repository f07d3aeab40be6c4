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
  const { viewer } = query;
  const me = (): string => {
    values.push(viewer.accountId);
    return placeholder(values.length);
  };
  const others = viewer.allOrders ? undefined : `(account_id IS NULL OR account_id = ${me()})`;
  const applications = viewer.allApplications
    ? undefined
    : viewer.ownApplications
      ? `account_id = ${me()}`
      : 'FALSE';
  if (applications === undefined && others !== undefined) {
    where.push(`(type LIKE 'appl%' OR ${others})`);
  } else if (applications !== undefined) {
    // application.* and applicant.* (the only types starting so) follow the applications scopes.
    where.push(`(CASE WHEN type LIKE 'appl%' THEN ${applications} ELSE ${others ?? 'TRUE'} END)`);
  }
  values.push(query.limit);
  return { where: `${where.join(' AND ')} ORDER BY ${order} LIMIT ${placeholder(values.length)}`, values };
}
