import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../http/errors.js';
import { IdempotencyHeaders, idempotencyInput, refusal, replay } from '../../http/idempotency/index.js';
import { decodeCursor, sendPage } from '../../http/paging.js';
import { errorResponses, header } from '../../http/responses.js';
import { MAX_ID, ref } from '../../http/schemas.js';
import type { ModuleContext } from '../module.js';
import { petRepository } from './repository.js';
import { ListPetsQuery, NewPet, Pet, PetIdParams, Pets } from './schemas.js';

/** getPet was deprecated with API 1.0.0 (RFC 9745 date) and is removed at the sunset instant (RFC 8594). */
export const GET_PET_DEPRECATED_AT = Date.UTC(2026, 0, 1);
export const GET_PET_SUNSET_AT = Date.UTC(2030, 11, 5);
const DEPRECATION_HEADERS = {
  deprecation: `@${GET_PET_DEPRECATED_AT / 1000}`,
  sunset: new Date(GET_PET_SUNSET_AT).toUTCString(),
  link: '</v1/pets>; rel="successor-version"',
};

const rateLimitNote = 'Every response carries the rate-limit headers (see components.headers).';

export const petRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (app, { database, clock }) => {
  const pets = database.repository(petRepository);

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
      const rows = await pets.list({ status, afterId, limit: limit + 1 });
      return sendPage(reply, rows, { path: '/v1/pets', limit, filters: { status } });
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
        body: ref(NewPet),
        response: {
          201: {
            ...ref(Pet),
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
      // The fingerprint of createPet is that of the body as validated, `status` null when omitted.
      const idempotency = idempotencyInput(
        request,
        'createPet',
        [body.name, body.categoryId, body.status ?? null],
        clock,
      );
      const result = await pets.create(
        { name: body.name, categoryId: body.categoryId, status: body.status ?? 'available' },
        idempotency,
      );
      switch (result.kind) {
        case 'created':
          return reply.code(201).header('location', `/v1/pets/${result.pet.id}`).send(result.pet);
        case 'replayed':
          return replay(reply, result.status as 201)
            .header('location', `/v1/pets/${result.body.id}`)
            .send(result.body);
        case 'unknown_category':
          throw new ApiError('validation_failed', 'Invalid request: categoryId names no existing category.', [
            { field: 'categoryId', message: 'names no existing category' },
          ]);
        case 'idempotency_mismatch':
          throw refusal('mismatch');
        case 'idempotency_in_progress':
          throw refusal('in_progress');
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
          200: ref(Pet),
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
      const pet = id <= MAX_ID ? await pets.get(id) : undefined;
      if (!pet) throw new ApiError('pet_not_found');
      return pet;
    },
  );
};
