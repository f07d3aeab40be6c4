/**
 * A pet's profile: GET, PUT (the whole document) and PATCH (JSON Merge Patch). Writes honour `If-Match`
 * (the profile's strong ETag; `"0"` before the first write) and `Idempotency-Key`, and append
 * `pet.profile_updated` in their transaction.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ifMatch, notModified, preconditionFailed, strongEtag } from '../../http/conditional.js';
import { ApiError } from '../../http/errors.js';
import { IdempotencyHeaders, idempotencyInput, refusal, replay } from '../../http/idempotency/index.js';
import { mergePatchBody, requireDeclaredBody } from '../../http/merge-patch.js';
import { errorResponses, etagHeader, rateLimitNote, replayedHeader } from '../../http/responses.js';
import { MAX_ID, pathId, ref } from '../../http/schemas.js';
import type { ModuleContext } from '../module.js';
import {
  profileRepository,
  type ProfileChange,
  type ProfileDoc,
  type ProfileWriteResult,
} from './repository.js';
import { canonical, mergePatch, profileProblem, renderProfile } from './decisions.js';
import { PetProfile, PetProfileInput, PetProfilePatch } from './schemas.js';
import { petError } from '../pets/index.js';

const ETAG = etagHeader('The profile\'s version as a strong ETag (`"<n>"`, `"0"` before the first write).');
const REPLAYED = replayedHeader('`true` when this response replays an earlier one (same Idempotency-Key).');

const PetIdParams = Type.Object({
  petId: pathId('The pet id, a positive integer. Malformed: 400; well-formed but unknown: 404.', 42),
});

const WriteHeaders = Type.Object({
  ...IdempotencyHeaders.properties,
  'if-match': Type.Optional(
    Type.String({
      maxLength: 1024,
      description:
        'Only change the profile if its current ETag is one of these (strong comparison; `*`: any). Otherwise `412`.',
    }),
  ),
});

const writeResponses = {
  200: {
    ...ref(PetProfile),
    description: 'The profile after the change.',
    headers: { ETag: ETAG, 'Idempotent-Replayed': REPLAYED },
  },
  ...errorResponses(400, 401, 403, 404, 409, 413, 415, 422),
  412: { ...errorResponses(412)[412]!, headers: { ETag: etagHeader('The current ETag of the profile.') } },
};

export const profileRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (app, { database, clock }) => {
  const profiles = database.repository(profileRepository);

  const today = () => new Date(clock()).toISOString().slice(0, 10);

  async function write(
    request: FastifyRequest,
    reply: FastifyReply,
    operation: string,
    body: unknown,
    change: ProfileChange,
  ): Promise<FastifyReply> {
    const { petId } = request.params as { petId: number };
    if (petId > MAX_ID) throw petError('pet_not_found', `No pet with id ${petId}.`);
    const test = ifMatch(request);
    const idempotency = idempotencyInput(request, operation, [petId, body], clock);
    const result: ProfileWriteResult = await profiles.write(
      {
        petId,
        change,
        ifMatch: test && ((version) => test(strongEtag(version))),
        now: idempotency?.now ?? clock(),
      },
      idempotency,
    );
    switch (result.kind) {
      case 'done':
        return reply.header('etag', strongEtag(result.record.version)).send(renderProfile(result.record));
      case 'replayed':
        return replay(reply, result.status)
          .header('etag', strongEtag(result.body.version))
          .send(renderProfile(result.body));
      case 'not_found':
        throw petError('pet_not_found', `No pet with id ${petId}.`);
      case 'precondition_failed':
        throw preconditionFailed(strongEtag(result.version));
      case 'invalid':
        throw new ApiError('validation_failed', {
          message: `Invalid request: ${result.field} ${result.message}.`,
          details: [{ field: result.field, message: result.message }],
        });
      case 'idempotency_mismatch':
        throw refusal('mismatch');
      case 'idempotency_in_progress':
        throw refusal('in_progress');
    }
  }

  app.get(
    '/pets/:petId/profile',
    {
      config: { access: { scopes: ['pets:read'] } },
      schema: {
        operationId: 'getPetProfile',
        tags: ['animals'],
        summary: "Get an animal's profile",
        description:
          'What a storefront shows beside the `Pet`. A pet without a profile answers the empty one ' +
          `(\`{ "updatedAt": null }\`). \`If-None-Match\` answers 304. ${rateLimitNote}`,
        params: PetIdParams,
        response: {
          200: { ...ref(PetProfile), headers: { ETag: ETAG } },
          304: { type: 'null', description: 'Not modified: the profile is unchanged since the ETag sent.' },
          ...errorResponses(400, 401, 403, 404),
        },
      },
    },
    async (request, reply) => {
      const { petId } = request.params;
      const record = petId <= MAX_ID ? await profiles.get(petId) : undefined;
      if (!record) throw petError('pet_not_found', `No pet with id ${petId}.`);
      if (notModified(request, reply, strongEtag(record.version))) return reply;
      return renderProfile(record);
    },
  );

  app.put(
    '/pets/:petId/profile',
    {
      config: { access: { scopes: ['pets:write'] } },
      schema: {
        operationId: 'putPetProfile',
        tags: ['animals'],
        summary: "Replace an animal's profile",
        description:
          'The whole profile: fields left out are removed. `updatedAt` is read-only (accepted and ignored). ' +
          '`latitude` and `longitude` come together; `birthDate` is not in the future. `If-Match` is ' +
          'optional and honoured (412 with the current `ETag`). Writes a `pet.profile_updated` event. ' +
          `Supports \`Idempotency-Key\`. ${rateLimitNote}`,
        params: PetIdParams,
        headers: WriteHeaders,
        body: ref(PetProfileInput),
        response: writeResponses,
      },
    },
    async (request, reply) => {
      const doc = canonical(request.body as Record<string, unknown>);
      const problem = profileProblem(doc, today());
      if (problem) {
        throw new ApiError('validation_failed', {
          message: `Invalid request: ${problem.invalid} ${problem.message}.`,
          details: [{ field: problem.invalid, message: problem.message }],
        });
      }
      return write(request, reply, 'putPetProfile', doc, () => doc);
    },
  );

  app.patch(
    '/pets/:petId/profile',
    {
      config: { access: { scopes: ['pets:write'] } },
      preValidation: async (request) => requireDeclaredBody(request),
      schema: {
        operationId: 'patchPetProfile',
        tags: ['animals'],
        summary: "Change an animal's profile",
        description:
          'A JSON Merge Patch (`application/merge-patch+json`; `application/json` is accepted too): fields ' +
          'given replace the stored ones, `null` removes one, `goodWith` and `location` merge field by field. ' +
          'The result is validated as a whole profile. `If-Match` is optional and honoured (412). Writes a ' +
          `\`pet.profile_updated\` event. Supports \`Idempotency-Key\`. ${rateLimitNote}`,
        params: PetIdParams,
        headers: WriteHeaders,
        body: mergePatchBody(ref(PetProfilePatch)),
        response: writeResponses,
      },
    },
    async (request, reply) => {
      // `updatedAt` is read-only: accepted and ignored.
      const patch = { ...(request.body as Record<string, unknown>) };
      delete patch.updatedAt;
      const date = today();
      return write(request, reply, 'patchPetProfile', patch, (current: ProfileDoc) => {
        const merged = canonical(mergePatch(current, patch) as Record<string, unknown>);
        return profileProblem(merged, date) ?? merged;
      });
    },
  );
};
