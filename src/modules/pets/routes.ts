import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { strongEtag } from '../../http/conditional.js';
import { ApiError } from '../../http/errors.js';
import { IdempotencyHeaders, idempotencyInput, refusal, replay } from '../../http/idempotency/index.js';
import { PageCache, sendSerializedPage, serializePage } from '../../http/page-cache.js';
import { sendPage } from '../../http/paging.js';
import { absoluteLink } from '../../http/public-url.js';
import {
  errorResponses,
  etagHeader,
  linkHeader,
  locationHeader,
  notModifiedResponse,
  rateLimitNote,
  replayedHeader,
} from '../../http/responses.js';
import { MAX_ID, ref } from '../../http/schemas.js';
import type { ModuleContext } from '../module.js';
import { petRepository } from './repository.js';
import { ListPetsQuery, NewPet, Pet, PetIdParams, Pets } from './schemas.js';
import { writeRoutes } from './write-routes.js';
import { petError } from './errors.js';

/** getPet was deprecated with API 1.0.0 (RFC 9745 date) and is removed at the sunset instant (RFC 8594). */
export const GET_PET_DEPRECATED_AT = Date.UTC(2026, 0, 1);
export const GET_PET_SUNSET_AT = Date.UTC(2030, 11, 5);
const DEPRECATION_HEADERS = {
  deprecation: `@${GET_PET_DEPRECATED_AT / 1000}`,
  sunset: new Date(GET_PET_SUNSET_AT).toUTCString(),
  link: '</v1/pets>; rel="successor-version"',
};

const PET_ETAG = etagHeader(
  'The pet\'s version as a strong entity tag (`"<n>"`), for `If-Match` / `If-None-Match`.',
);
/** A new pet's version: the column's default. */
const CREATED_ETAG = strongEtag(1);

export const petRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (
  app,
  { database, clock, config, cursors },
) => {
  // Set in getPet's own onSend, after the app-wide hook that makes links absolute, so made absolute here.
  const deprecationHeaders =
    config.publicUrl === undefined
      ? DEPRECATION_HEADERS
      : { ...DEPRECATION_HEADERS, link: absoluteLink(config.publicUrl, DEPRECATION_HEADERS.link) };
  const pets = database.repository(petRepository);
  const pages = new PageCache();
  // getPet's answers, exact as the list pages (same version label): a pet is ~100 bytes serialized.
  const single = new PageCache(10_000);

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
          'JSON array. The page carries a weak `ETag`; with a matching `If-None-Match` the answer is `304` ' +
          `without a body (it counts against the quota like any request). ${rateLimitNote}`,
        querystring: ListPetsQuery,
        response: {
          200: {
            ...Pets,
            headers: {
              Link: linkHeader('Present when another page exists: `<…>; rel="next"`.'),
              ETag: etagHeader('A weak entity tag of this page (`W/"…"`), for `If-None-Match`.'),
            },
          },
          304: notModifiedResponse('The page is unchanged (`If-None-Match` matched).'),
          ...errorResponses(400, 401),
        },
      },
    },
    async (request, reply) => {
      const { limit = 20, status, cursor } = request.query;
      const binding = { path: '/v1/pets', filters: { status } };
      const afterId = cursor === undefined ? undefined : cursors.readId(binding, cursor);
      // Read before the page, so a page is never labelled newer than its data (see http/page-cache.ts).
      const version = pets.readVersion();
      const key = `${limit}|${status ?? ''}|${afterId ?? 0}`;
      const page =
        pages.get(version, key) ??
        (await pages.load(version, key, async () => {
          const rows = await pets.list({ status, afterId, limit: limit + 1 });
          return serializePage(reply, sendPage(reply, rows, { ...binding, limit, cursors }));
        }));
      return sendSerializedPage(request, reply, page);
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
          `rejected. Supports \`Idempotency-Key\`. The \`ETag\` is the new pet's version. ${rateLimitNote}`,
        headers: IdempotencyHeaders,
        body: ref(NewPet),
        response: {
          201: {
            ...ref(Pet),
            description: 'The pet as stored, with its id; `Location` names it.',
            headers: {
              Location: locationHeader('Path of the created pet: `/v1/pets/{id}`.'),
              ETag: PET_ETAG,
              'Idempotent-Replayed': replayedHeader(
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
        clock(),
      );
      switch (result.kind) {
        case 'created':
          return reply
            .code(201)
            .header('location', `/v1/pets/${result.pet.id}`)
            .header('etag', CREATED_ETAG)
            .send(result.pet);
        case 'replayed':
          // The replayed body is the pet as created, whose version was the first.
          return replay(reply, result.status as 201)
            .header('location', `/v1/pets/${result.body.id}`)
            .header('etag', CREATED_ETAG)
            .send(result.body);
        case 'unknown_category':
          throw new ApiError('validation_failed', {
            message: 'Invalid request: categoryId names no existing category.',
            details: [{ field: 'categoryId', message: 'names no existing category' }],
          });
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
          `with the \`status\` filter instead. Every response carries Deprecation, Sunset and Link. The \`ETag\` is ` +
          `the pet's version; with a matching \`If-None-Match\` the answer is \`304\` without a body. ${rateLimitNote}`,
        params: PetIdParams,
        response: {
          200: { ...ref(Pet), description: 'The pet.', headers: { ETag: PET_ETAG } },
          304: notModifiedResponse('The pet is unchanged (`If-None-Match` matched).'),
          ...errorResponses(400, 401, 404, 410),
        },
      },
      // Callback style: no promise per response for three constant headers.
      onSend: (_request, reply, payload, done) => {
        reply.headers(deprecationHeaders);
        done(null, payload);
      },
    },
    async (request, reply) => {
      if (clock() >= GET_PET_SUNSET_AT) throw petError('gone');
      const id = request.params.petId;
      // Read before the pet, so an answer is never labelled newer than its data (see http/page-cache.ts).
      const version = pets.readVersion();
      const key = String(id);
      const answer =
        single.get(version, key) ??
        (await single.load(version, key, async () => {
          // Well-formed int64 ids beyond what the service issues cannot exist.
          const found = id <= MAX_ID ? await pets.get(id) : undefined;
          if (!found) throw petError('pet_not_found');
          const body = Buffer.from(reply.serialize(found.pet) as string);
          return { body, etag: strongEtag(found.version), link: undefined };
        }));
      return sendSerializedPage(request, reply, answer);
    },
  );

  await app.register(writeRoutes, { pets, clock });
};
