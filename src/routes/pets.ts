import { createHash } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Clock } from '../clock.js';
import { ApiError } from '../errors.js';
import { IdempotencyHeaders, ListPetsQuery, MAX_ID, NewPet, Pet, PetIdParams, Pets } from '../schemas.js';
import { IDEMPOTENCY_RETENTION_MS, type Storage } from '../storage/storage.js';
import { errorResponses, header } from './responses.js';

export interface PetRoutesOptions {
  storage: Storage;
  clock: Clock;
}

/** getPet was deprecated with API 1.0.0 (RFC 9745 date) and is removed at the sunset instant (RFC 8594). */
export const GET_PET_DEPRECATED_AT = Date.UTC(2026, 0, 1);
export const GET_PET_SUNSET_AT = Date.UTC(2030, 11, 5);
const DEPRECATION_HEADERS = {
  deprecation: `@${GET_PET_DEPRECATED_AT / 1000}`,
  sunset: new Date(GET_PET_SUNSET_AT).toUTCString(),
  link: '</v1/pets>; rel="successor-version"',
};

/** Cursors are opaque to clients; inside, the last id of the previous page (keyset pagination). */
function encodeCursor(lastId: number): string {
  return Buffer.from(`id:${lastId}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const match = /^id:([1-9][0-9]{0,15})$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  const id = match ? Number(match[1]) : NaN;
  if (!Number.isSafeInteger(id) || encodeCursor(id) !== cursor) {
    throw new ApiError('validation_failed', 'Invalid request: cursor is not one this service issued.', [
      { field: 'cursor', message: 'is not a cursor this service issued' },
    ]);
  }
  return id;
}

function fingerprint(body: NewPet): string {
  return createHash('sha256')
    .update(JSON.stringify([body.name, body.categoryId, body.status ?? null]))
    .digest('base64url');
}

const rateLimitNote = 'Every response carries the rate-limit headers (see components.headers).';

export const petRoutes: FastifyPluginAsyncTypebox<PetRoutesOptions> = async (app, { storage, clock }) => {
  app.get(
    '/pets',
    {
      config: { access: { scopes: ['pets:read'] } },
      schema: {
        operationId: 'listPets',
        tags: ['animals'],
        summary: 'List animals',
        description:
          'Pets ordered by id ascending, at most `limit` (default 20). When more exist, the response carries ' +
          '`Link: </v1/pets?…&cursor=…>; rel="next"`; follow it for the next page. The body is always a plain ' +
          `JSON array. ${rateLimitNote}`,
        querystring: ListPetsQuery,
        response: {
          200: {
            ...Pets,
            headers: { Link: header('Present when another page exists: `<…>; rel="next"`.') },
          },
          ...errorResponses(400, 401),
        },
      },
    },
    async (request, reply) => {
      const { limit = 20, status, cursor } = request.query;
      const afterId = cursor === undefined ? undefined : decodeCursor(cursor);
      const rows = await storage.listPets({ status, afterId, limit: limit + 1 });
      if (rows.length > limit) {
        rows.length = limit;
        // Every part is URL-safe as is (an integer, a status name, base64url): no URLSearchParams needed.
        const statusParam = status ? `&status=${status}` : '';
        const cursor = encodeCursor(rows[limit - 1]!.id);
        reply.header('link', `</v1/pets?limit=${limit}${statusParam}&cursor=${cursor}>; rel="next"`);
      }
      return rows;
    },
  );

  app.post(
    '/pets',
    {
      config: { access: { scopes: ['pets:write'] } },
      schema: {
        operationId: 'createPet',
        tags: ['animals'],
        summary: 'Add an animal',
        description:
          '`status` defaults to `available`. `categoryId` must name an existing category. Unknown fields are ' +
          `rejected. Supports \`Idempotency-Key\`. ${rateLimitNote}`,
        headers: IdempotencyHeaders,
        body: NewPet,
        response: {
          201: {
            ...Pet,
            headers: {
              Location: header('Path of the created pet: `/v1/pets/{id}`.'),
              'Idempotent-Replayed': header(
                '`true` when this response replays an earlier one (same Idempotency-Key).',
              ),
            },
          },
          ...errorResponses(400, 401, 409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const key = request.headers['idempotency-key'];
      const now = clock();
      const principal = request.principal!;
      const result = await storage.createPet(
        { name: body.name, categoryId: body.categoryId, status: body.status ?? 'available' },
        key === undefined
          ? undefined
          : {
              accountId: principal.account.id,
              key,
              fingerprint: fingerprint(body),
              notBefore: now - IDEMPOTENCY_RETENTION_MS,
              now,
            },
      );
      switch (result.kind) {
        case 'created':
          return reply.code(201).header('location', `/v1/pets/${result.pet.id}`).send(result.pet);
        case 'replayed':
          return reply
            .code(result.status as 201)
            .header('location', `/v1/pets/${result.body.id}`)
            .header('idempotent-replayed', 'true')
            .send(result.body);
        case 'unknown_category':
          throw new ApiError('validation_failed', 'Invalid request: categoryId names no existing category.', [
            { field: 'categoryId', message: 'names no existing category' },
          ]);
        case 'idempotency_mismatch':
          throw new ApiError('idempotency_key_reused');
        case 'idempotency_in_progress':
          throw new ApiError('idempotency_in_progress', undefined, undefined, { 'retry-after': '1' });
      }
    },
  );

  app.get(
    '/pets/:petId',
    {
      config: { access: { scopes: ['pets:read'] } },
      schema: {
        operationId: 'getPet',
        tags: ['animals'],
        summary: 'Get an animal (deprecated)',
        deprecated: true,
        description:
          'Deprecated; removed on 2030-12-05T00:00:00Z, after which it answers 410 `gone`. Use `GET /v1/pets` ' +
          `with the \`status\` filter instead. Every response carries Deprecation, Sunset and Link. ${rateLimitNote}`,
        params: PetIdParams,
        response: {
          200: Pet,
          ...errorResponses(400, 401, 404, 410),
        },
      },
      // Callback style: no promise per response for three constant headers.
      onSend: (_request, reply, payload, done) => {
        reply.headers(DEPRECATION_HEADERS);
        done(null, payload);
      },
    },
    async (request) => {
      if (clock() >= GET_PET_SUNSET_AT) throw new ApiError('gone');
      const id = request.params.petId;
      // Well-formed int64 ids beyond what the service issues cannot exist.
      const pet = id <= MAX_ID ? await storage.getPet(id) : undefined;
      if (!pet) throw new ApiError('pet_not_found');
      return pet;
    },
  );
};
