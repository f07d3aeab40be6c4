/** The application form and the applicants' personal data over HTTP. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ifMatch as ifMatchOf, notModified, preconditionFailed, strongEtag } from '../../http/conditional.js';
import { ApiError } from '../../http/errors.js';
import { IdempotencyHeaders, idempotencyInput, refusal, replay } from '../../http/idempotency/index.js';
import { errorResponses, etagHeader } from '../../http/responses.js';
import { ref } from '../../http/schemas.js';
import type { ModuleContext } from '../module.js';
import { checkForm } from './decisions.js';
import { applicationError } from './errors.js';
import { renderApplicant, renderApplication, renderForm } from './render.js';
import { actorOf } from './replies.js';
import {
  Applicant,
  ApplicantExport,
  ApplicantIdParams,
  ApplicationForm,
  FormBody,
  IfMatchHeaders,
} from './schemas.js';
import { applicationStore } from './factory.js';

const TAGS = ['applications'];

function described(status: number, description: string) {
  return { [status]: { ...errorResponses(status)[status]!, description } };
}

const applicantNotFound = () => applicationError('applicant_not_found', 'No applicant with this id.');

export const applicantRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (app, { database, clock }) => {
  const store = database.repository(applicationStore);

  app.get(
    '/application-form',
    {
      config: { access: { scopes: ['applications:read'] } },
      schema: {
        operationId: 'getApplicationForm',
        tags: TAGS,
        summary: 'Get the application form',
        description: 'The current questions; its `version` is the strong ETag. `If-None-Match` answers 304.',
        response: {
          200: { ...ref(ApplicationForm), headers: { ETag: etagHeader('The form\'s version (`"<n>"`).') } },
          304: { type: 'null', description: 'Not modified.' },
          ...errorResponses(401, 403),
        },
      },
    },
    async (request, reply) => {
      const form = await store.form();
      if (notModified(request, reply, strongEtag(form.version))) return reply;
      return reply.header('etag', strongEtag(form.version)).send(renderForm(form));
    },
  );

  app.put(
    '/application-form',
    {
      config: { access: { scopes: ['applications:manage'] } },
      schema: {
        operationId: 'putApplicationForm',
        tags: TAGS,
        summary: 'Replace the application form',
        description:
          'A new version of the questions (at most 50). Applications already made keep the `formVersion` they ' +
          'answered. `If-Match` honoured (412 when stale).',
        headers: IfMatchHeaders,
        body: FormBody,
        response: {
          200: { ...ref(ApplicationForm), headers: { ETag: etagHeader('The new version (`"<n>"`).') } },
          ...errorResponses(400, 401, 403, 413, 415),
          ...described(412, '`precondition_failed`: If-Match does not match the current version.'),
        },
      },
    },
    async (request, reply) => {
      const problems = checkForm(request.body.questions);
      if (problems.length > 0) {
        throw new ApiError('validation_failed', {
          message: `Invalid request: ${problems.map((p) => `${p.field} ${p.message}`).join('; ')}.`,
          details: problems,
        });
      }
      const matches = ifMatchOf(request);
      const result = await store.putForm(
        request.body.questions,
        matches && ((version) => matches(strongEtag(version))),
        clock(),
      );
      if (result.kind === 'precondition_failed') throw preconditionFailed(strongEtag(result.version));
      return reply.header('etag', strongEtag(result.form.version)).send(renderForm(result.form));
    },
  );

  app.get(
    '/applicants/:applicantId',
    {
      config: { access: { scopes: ['applications:manage'] } },
      schema: {
        operationId: 'getApplicant',
        tags: TAGS,
        summary: 'Get an applicant',
        description: 'The person, as held now (after erasure: `name` and `email` null, `erasedAt` set).',
        params: ApplicantIdParams,
        response: {
          200: ref(Applicant),
          ...errorResponses(400, 401, 403),
          ...described(404, '`applicant_not_found`.'),
        },
      },
    },
    async (request) => {
      const applicant = await store.applicant(request.params.applicantId);
      if (!applicant) throw applicantNotFound();
      return renderApplicant(applicant);
    },
  );

  app.get(
    '/applicants/:applicantId/export',
    {
      config: { access: { scopes: ['applications:manage'] } },
      schema: {
        operationId: 'exportApplicant',
        tags: TAGS,
        summary: 'Export everything held about an applicant',
        description: 'The applicant and their applications with answers and history, as one JSON document.',
        params: ApplicantIdParams,
        response: {
          200: ApplicantExport,
          ...errorResponses(400, 401, 403),
          ...described(404, '`applicant_not_found`.'),
        },
      },
    },
    async (request, reply) => {
      const applicant = await store.applicant(request.params.applicantId);
      if (!applicant) throw applicantNotFound();
      const applications = await store.applicationsOf(applicant.seq);
      reply.header('content-disposition', `attachment; filename="${applicant.id}.json"`);
      return {
        applicant: renderApplicant(applicant),
        applications: applications.map((a) => renderApplication(a, applicant)),
      };
    },
  );

  app.delete(
    '/applicants/:applicantId',
    {
      config: { access: { scopes: ['applications:manage'] } },
      schema: {
        operationId: 'eraseApplicant',
        tags: TAGS,
        summary: 'Erase an applicant',
        description:
          'Name, email, phone, address and every answer are removed for good; open applications are withdrawn ' +
          "(`statusReason: erased`, an approved one's order cancelled); statuses and dates stay. Repeatable: " +
          'an erased applicant answers 204 again. `Idempotency-Key` honoured.',
        params: ApplicantIdParams,
        headers: IdempotencyHeaders,
        response: {
          204: { type: 'null', description: 'Erased (now or before).' },
          ...errorResponses(400, 401, 403, 422),
          ...described(404, '`applicant_not_found`.'),
          ...described(409, '`idempotency_in_progress`.'),
        },
      },
    },
    async (request, reply) => {
      const id = request.params.applicantId;
      const idempotency = idempotencyInput(request, 'eraseApplicant', [id], clock);
      const result = await store.erase(
        { id, keyId: actorOf(request).keyId, now: idempotency?.now ?? clock() },
        idempotency,
      );
      switch (result.kind) {
        case 'replayed':
          return replay(reply, 204).send(null);
        case 'idempotency_mismatch':
          throw refusal('mismatch');
        case 'idempotency_in_progress':
          throw refusal('in_progress');
        case 'not_found':
          throw applicantNotFound();
        case 'erased':
          return reply.code(204).send(null);
      }
    },
  );
};
