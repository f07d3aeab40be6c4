/**
 * updatePet and deletePet: conditional (`If-Match`) and idempotent (`Idempotency-Key`) writes
 * of one pet. The precondition runs inside the repository's transaction, so it is atomic with the write.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Clock } from '../../clock.js';
import { ifMatch, preconditionFailed, strongEtag } from '../../http/conditional.js';
import { ApiError } from '../../http/errors.js';
import { IdempotencyHeaders, idempotencyInput, refusal, replay } from '../../http/idempotency/index.js';
import { mergePatchBody, requireDeclaredBody } from '../../http/merge-patch.js';
import { errorResponses, etagHeader, rateLimitNote, replayedHeader } from '../../http/responses.js';
import { MAX_ID, ref } from '../../http/schemas.js';
import type { PetRepository, VersionTest } from './repository.js';
import { Pet, PetIdParams, PetPatch } from './schemas.js';
import { petError } from './errors.js';

const PET_ETAG = etagHeader(
  'The pet\'s version as a strong entity tag (`"<n>"`), for `If-Match` / `If-None-Match`.',
);
const REPLAYED = replayedHeader('`true` when this response replays an earlier one (same Idempotency-Key).');

const PreconditionHeaders = Type.Object({
  ...IdempotencyHeaders.properties,
  'if-match': Type.Optional(
    Type.String({
      maxLength: 1024,
      description:
        'Only change the pet if its current ETag is one of these (strong comparison; `*`: any). Otherwise `412`.',
    }),
  ),
});

const preconditionResponse = {
  412: { ...errorResponses(412)[412]!, headers: { ETag: etagHeader('The current entity tag of the pet.') } },
};

export interface WriteRoutesOptions {
  pets: PetRepository;
  clock: Clock;
}

export const writeRoutes: FastifyPluginAsyncTypebox<WriteRoutesOptions> = async (app, { pets, clock }) => {
  /** The request's If-Match as a test of a version. */
  const precondition = (request: Parameters<typeof ifMatch>[0]): VersionTest | undefined => {
    const test = ifMatch(request);
    return test && ((version) => test(strongEtag(version)));
  };

  app.patch(
    '/pets/:petId',
    {
      config: { access: { scopes: ['pets:write'] } },
      preValidation: async (request) => requireDeclaredBody(request),
      schema: {
        operationId: 'updatePet',
        tags: ['animals'],
        summary: 'Change an animal',
        description:
          'A JSON Merge Patch (`application/merge-patch+json`; `application/json` is accepted too) of `name`, ' +
          '`categoryId` and `status`, validated as on creation; `null`, `id`, unknown fields and an empty ' +
          'object are rejected with 400. `If-Match` is optional and honoured (a stale one answers 412 with the ' +
          'current `ETag`). The status cannot change while the pet has an open order (409 ' +
          `\`pet_has_open_order\`). Supports \`Idempotency-Key\`. ${rateLimitNote}`,
        params: PetIdParams,
        headers: PreconditionHeaders,
        body: mergePatchBody(ref(PetPatch)),
        response: {
          200: {
            ...ref(Pet),
            description: 'The pet after the change.',
            headers: { ETag: PET_ETAG, 'Idempotent-Replayed': REPLAYED },
          },
          ...errorResponses(400, 401, 404, 409, 413, 415, 422),
          ...preconditionResponse,
        },
      },
    },
    async (request, reply) => {
      const id = request.params.petId;
      // The type provider does not infer a `content` map; the schema validated the body (requireDeclaredBody).
      const { name, categoryId, status } = request.body as PetPatch;
      if (id > MAX_ID) throw petError('pet_not_found');
      // The same key on another pet or with another change is another request (422).
      const idempotency = idempotencyInput(
        request,
        'updatePet',
        [id, name ?? null, categoryId ?? null, status ?? null],
        clock,
      );
      const result = await pets.update(
        id,
        { name, categoryId, status },
        precondition(request),
        idempotency,
        clock(),
      );
      switch (result.kind) {
        case 'updated':
          return reply.header('etag', strongEtag(result.version)).send(result.pet);
        case 'replayed':
          return replay(reply, result.status as 200)
            .header('etag', strongEtag(result.version))
            .send(result.pet);
        case 'unknown_category':
          throw new ApiError('validation_failed', {
            message: 'Invalid request: categoryId names no existing category.',
            details: [{ field: 'categoryId', message: 'names no existing category' }],
          });
        case 'open_order':
          throw petError(
            'pet_has_open_order',
            `Pet ${id} has an open order (placed or approved); its status changes with the order.`,
          );
        default:
          throw writeRefusal(result, id);
      }
    },
  );

  app.delete(
    '/pets/:petId',
    {
      config: { access: { scopes: ['pets:write'] } },
      schema: {
        operationId: 'deletePet',
        tags: ['animals'],
        summary: 'Remove an animal',
        description:
          '`204` without a body; afterwards the pet answers 404. Refused with 409 `pet_has_open_order` while an ' +
          'order for it is placed or approved; past orders keep their `petId`. `If-Match` is optional and ' +
          `honoured (412). Supports \`Idempotency-Key\` (a replay answers 204 again). ${rateLimitNote}`,
        params: PetIdParams,
        headers: PreconditionHeaders,
        response: {
          204: { description: 'Deleted.', type: 'null', headers: { 'Idempotent-Replayed': REPLAYED } },
          ...errorResponses(400, 401, 404, 409, 422),
          ...preconditionResponse,
        },
      },
    },
    async (request, reply) => {
      const id = request.params.petId;
      if (id > MAX_ID) throw petError('pet_not_found');
      const idempotency = idempotencyInput(request, 'deletePet', [id], clock);
      const result = await pets.delete(id, precondition(request), idempotency, clock());
      switch (result.kind) {
        case 'deleted':
          return reply.code(204).send(null);
        case 'replayed':
          replay(reply, result.status);
          return reply.send(null);
        case 'open_order':
          throw petError(
            'pet_has_open_order',
            `Pet ${id} has an open order (placed or approved); cancel or deliver it first.`,
          );
        default:
          throw writeRefusal(result, id);
      }
    },
  );
};

type Refusal =
  | { kind: 'not_found' }
  | { kind: 'precondition_failed'; version: number }
  | { kind: 'idempotency_mismatch' }
  | { kind: 'idempotency_in_progress' };

function writeRefusal(result: Refusal, id: number): ApiError {
  switch (result.kind) {
    case 'not_found':
      return petError('pet_not_found', `No pet with id ${id}.`);
    case 'precondition_failed':
      return preconditionFailed(strongEtag(result.version));
    case 'idempotency_mismatch':
      return refusal('mismatch');
    case 'idempotency_in_progress':
      return refusal('in_progress');
  }
}
