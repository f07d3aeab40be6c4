/**
 * searchListings: the catalogue as adopters search it. Filters, words and distance are one statement per
 * page (keyset paging, so a page deep in the results costs what the first does; sorted by distance, one per
 * ring read, usually one), then one for the page's primary photos. Pages are kept as sent in the exact page
 * cache (http/page-cache.ts), so a search repeated before the data changes costs no statement.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PageCache } from '../../http/page-cache.js';
import { nextLink } from '../../http/paging.js';
import { renderRows } from '../../http/row-guard.js';
import { errorResponses, linkHeader } from '../../http/responses.js';
import type { ModuleContext } from '../module.js';
import { renderStoredPhoto } from '../photos/index.js';
import type { ProfileDoc } from '../profiles/index.js';
import { encodeListingCursor, LISTINGS_PATH, parseListingQuery, type ListingQuery } from './query.js';
import { listingRepository } from './repository.js';
import { Listings, SearchListingsQuery, type Listing } from './schemas.js';

declare module 'fastify' {
  interface FastifyRequest {
    listingQuery?: ListingQuery;
  }
}

export const listingRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (
  app,
  { database, config, cursors },
) => {
  const listings = database.repository(listingRepository);
  const base = config.publicUrl ?? '';
  // Pages as sent (body and Link), keyed by the request's path and query, exact as the pets' list pages:
  // answered only while the database is at the version the page was read at.
  const pages = new PageCache<{ body: Buffer; link: string | undefined }>();

  async function search(
    request: FastifyRequest,
    query: ListingQuery,
  ): Promise<{ rows: Listing[]; link: string | undefined }> {
    const rows = await listings.search(query);
    let link: string | undefined;
    if (rows.length > query.limit) {
      rows.length = query.limit;
      const last = rows[query.limit - 1]!;
      const cursor = encodeListingCursor(cursors, query, {
        id: last.id,
        name: last.name,
        distance: last.distance ?? undefined,
        span: query.sort === 'distance' ? Math.max(0, last.distance! - rows[0]!.distance!) : undefined,
      });
      link = nextLink(LISTINGS_PATH, query.limit, query.filters, cursor);
    }
    const photos = new Map(
      (await listings.primaryPhotos(rows.map((row) => row.id))).map((photo) => [photo.petId, photo]),
    );
    return {
      link,
      rows: renderRows(request, rows, (row): Listing => {
        const profile = row.doc === null ? {} : (JSON.parse(row.doc) as ProfileDoc);
        const photo = photos.get(row.id);
        const listing: Listing = {
          pet: { id: row.id, name: row.name, categoryId: row.categoryId, status: row.status },
          profile: {
            ...profile,
            updatedAt: row.updatedAt === null ? null : new Date(row.updatedAt).toISOString(),
          },
          primaryPhoto: photo ? renderStoredPhoto(photo, base) : null,
        };
        if (row.distance !== null) listing.distanceKm = Math.round(row.distance * 10) / 10;
        return listing;
      }),
    };
  }

  app.get(
    '/listings',
    {
      config: { access: { scopes: ['pets:read'] } },
      // Before the schema's validator, which stops at the first problem: the 400 names every one.
      preValidation: async (request) => {
        request.listingQuery = parseListingQuery(request.query as Record<string, unknown>, cursors);
      },
      schema: {
        operationId: 'searchListings',
        tags: ['animals'],
        summary: 'Search the catalogue',
        description:
          'Pets with their profile and primary photo. Filters combine with AND; a comma-separated list means ' +
          'any of its values. Boolean filters match the stated value only. With `near`, only pets within ' +
          '`radiusKm` (great-circle distance, exact) and each listing carries `distanceKm`. At most `limit` ' +
          '(default 20) per page; when more exist, `Link: <…&cursor=…>; rel="next"`. Unknown parameters and ' +
          'bad values answer 400 naming each. Every response carries the rate-limit headers (see components.headers).',
        querystring: SearchListingsQuery,
        response: {
          200: {
            ...Listings,
            headers: { Link: linkHeader('Present when another page exists: `<…>; rel="next"`.') },
          },
          ...errorResponses(400, 401, 403),
        },
      },
    },
    async (request, reply) => {
      const query = request.listingQuery!;
      // Read before the page, so a page is never labelled newer than its data (see http/page-cache.ts).
      const version = listings.readVersion();
      const page =
        pages.get(version, request.url) ??
        (await pages.load(version, request.url, async () => {
          const { rows, link } = await search(request, query);
          // Serialized by the route's own 200 schema, as Fastify would have sent the rows.
          return { body: Buffer.from(reply.serialize(rows) as string), link };
        }));
      if (page.link !== undefined) reply.header('link', page.link);
      // With a JSON content type set, Fastify sends a Buffer as it is, without serializing again.
      return (reply as FastifyReply)
        .header('content-type', 'application/json; charset=utf-8')
        .send(page.body);
    },
  );
};
