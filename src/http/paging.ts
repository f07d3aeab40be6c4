/**
 * Keyset paging for every list operation: a page is asked for with `limit` and an opaque `cursor`, and a
 * response with more to come carries `Link: <…&cursor=…>; rel="next"`. Inside, a cursor is the last id of
 * the previous page, authenticated together with the query it was issued for (http/cursors.ts); clients
 * must treat it as opaque.
 */
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { CursorBinding, Cursors } from './cursors.js';

/**
 * The paging query parameters every list operation takes; `sameFilters` tells a client what the cursor must
 * be sent with (e.g. "the same `status`"). A feed that is polled says so (`polled`); a cursor that carries
 * more than an id (a search's sort key) may be longer (`cursorMaxLength`).
 */
export function pageQuery(sameFilters: string, options: { polled?: boolean; cursorMaxLength?: number } = {}) {
  return {
    limit: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 1,
        maximum: 100,
        default: 20,
        description: 'Page size, 1..100. Values outside the range are rejected with 400, never clamped.',
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: options.cursorMaxLength ?? 200,
        description: `Opaque cursor taken from the \`Link: rel="next"\` header of the previous page${options.polled ? ' (or poll)' : ''}. Use it with ${sameFilters}: a cursor is valid only for the query it was issued for; any other, or an altered one, is \`400 invalid_cursor\`.`,
      }),
    ),
  };
}

/**
 * The `Link` value pointing at the next page: `path?limit=…&<filters>&cursor=…`, filters in given order.
 * Without a cursor the link starts from the beginning (a poll of a feed that has shown nothing yet).
 */
export function nextLink(
  path: string,
  limit: number,
  filters: Record<string, string | number | undefined>,
  cursor: string | undefined,
): string {
  let query = `limit=${limit}`;
  for (const [name, value] of Object.entries(filters)) {
    if (value !== undefined) query += `&${name}=${encodeURIComponent(String(value))}`;
  }
  if (cursor !== undefined) query += `&cursor=${cursor}`;
  return `<${path}?${query}>; rel="next"`;
}

/**
 * Trims a page fetched with `limit + 1` rows to `limit` and, when the extra row showed that more exist,
 * sets the `Link: rel="next"` header. Returns the page.
 */
export function sendPage<T extends { id: number }>(
  reply: FastifyReply,
  rows: T[],
  page: CursorBinding & { limit: number; cursors: Cursors },
): T[] {
  if (rows.length > page.limit) {
    rows.length = page.limit;
    const cursor = page.cursors.issueId(page, rows[page.limit - 1]!.id);
    reply.header('link', nextLink(page.path, page.limit, page.filters ?? {}, cursor));
  }
  return rows;
}
