/** Applications over HTTP: parse, call the store, answer. The rules are in decisions.ts. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hasScope } from '../../http/access.js';
import { ifMatch as ifMatchOf, notModified, preconditionFailed, strongEtag } from '../../http/conditional.js';
import { ApiError } from '../../http/errors.js';
import { idempotencyInput, refusal, replay } from '../../http/idempotency/index.js';
import { mergePatchBody, requireDeclaredBody } from '../../http/merge-patch.js';
import { decodeCursor, sendPage } from '../../http/paging.js';
import {
  errorResponses,
  etagHeader,
  linkHeader,
  locationHeader,
  replayedHeader,
} from '../../http/responses.js';
import { MAX_ID, ref } from '../../http/schemas.js';
import { orderError } from '../orders/index.js';
import type { ModuleContext } from '../module.js';
import type { Action, Actor, Refusal } from './decisions.js';
import { applicationError } from './errors.js';
import { renderApplication } from './render.js';
import { DEFAULT_MAX_OPEN_APPLICATIONS } from './settings.js';
import { applicationStore } from './factory.js';
import type { FullApplication, Replayable, WriteOutcome } from './store.js';
import {
  Application,
  ApplicationIdParams,
  ApplicationPatch,
  Applications,
  IfMatchHeaders,
  ListApplicationsQuery,
  NewApplication,
  RejectBody,
  RequestInfoBody,
  WithdrawBody,
  type ApplicationStatus,
} from './schemas.js';

const TAGS = ['applications'];
const ETAG = {
  ETag: etagHeader('The application\'s version as a strong ETag (`"<n>"`); send it in If-Match.'),
};
const REPLAYED = {
  'Idempotent-Replayed': replayedHeader('`true` when this response replays an earlier one.'),
};

function described(status: number, description: string) {
  return { [status]: { ...errorResponses(status)[status]!, description } };
}

export function actorOf(request: FastifyRequest): Actor {
  return {
    keyId: request.principal!.keyId,
    accountId: request.principal!.account.id,
    manager: hasScope(request, 'applications:manage'),
  };
}

const notFound = (id: string) =>
  applicationError('application_not_found', 'No application with this id is visible to this key.');

/** A refusal as the API's error (never quoting what the client sent about the applicant). */
export function refusalError(id: string, result: Refusal, petId?: number): ApiError {
  switch (result.kind) {
    case 'not_found':
      return notFound(id);
    case 'precondition_failed':
      return preconditionFailed(strongEtag(result.version));
    case 'invalid_transition':
      return orderError(
        'invalid_transition',
        `The application is ${result.status}; this action does not apply to it.`,
      );
    case 'pet_not_available':
      return orderError(
        'pet_not_available',
        result.unknown
          ? `Pet ${petId ?? ''} does not exist.`.replace('  ', ' ')
          : `Pet ${petId ?? ''} is not available for adoption.`.replace('  ', ' '),
      );
    case 'open_application_limit':
      return applicationError(
        'open_application_limit',
        `This applicant already holds ${result.limit} open applications, the most they may.`,
      );
    case 'application_exists':
      return applicationError('application_exists');
    case 'invalid_answers':
      return new ApiError('validation_failed', {
        message: `Invalid request: ${result.problems.map((p) => `${p.field} ${p.message}`).join('; ')}.`,
        details: result.problems,
      });
  }
}

export const applicationRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (app, context) => {
  const { database, clock, config } = context;
  const store = database.repository(applicationStore);
  const max = config.maxOpenApplications ?? DEFAULT_MAX_OPEN_APPLICATIONS;

  const visibleOrThrow = (request: FastifyRequest, id: string, found: FullApplication | undefined) => {
    const actor = actorOf(request);
    if (!found || (!actor.manager && found.application.accountId !== actor.accountId)) throw notFound(id);
    return found;
  };
  const answer = (reply: FastifyReply, found: FullApplication, status = 200) =>
    reply
      .code(status)
      .header('etag', strongEtag(found.application.version))
      .send(renderApplication(found.application, found.applicant));

  /** The outcome of a write: the application, its replay (re-read: records keep ids only), or the error. */
  async function settle(
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    result: Replayable<WriteOutcome>,
    status: number,
    petId?: number,
  ): Promise<FastifyReply> {
    switch (result.kind) {
      case 'replayed': {
        const found = visibleOrThrow(request, id, result.id ? await store.get(result.id) : undefined);
        replay(reply, result.status);
        if (result.status === 201) reply.header('location', `/v1/applications/${found.application.id}`);
        return answer(reply, found, result.status);
      }
      case 'idempotency_mismatch':
        throw refusal('mismatch');
      case 'idempotency_in_progress':
        throw refusal('in_progress');
      case 'done':
        if (status === 201) reply.header('location', `/v1/applications/${result.application.application.id}`);
        return answer(reply, result.application, status);
      default:
        throw refusalError(id, result, petId);
    }
  }

  app.post(
    '/applications',
    {
      config: { access: { scopes: ['applications:write'] } },
      schema: {
        operationId: 'createApplication',
        tags: TAGS,
        summary: 'Apply to adopt a pet',
        description:
          'Answers are checked against the current form (unknown, missing or mistyped answers: 400 naming the ' +
          'question). The applicant is found again by email within the account (case-insensitive) and the ' +
          'fields given update it. `Idempotency-Key` honoured.',
        headers: IfMatchHeaders,
        body: NewApplication,
        response: {
          201: {
            ...ref(Application),
            headers: { Location: locationHeader('`/v1/applications/{id}`.'), ...ETAG, ...REPLAYED },
          },
          ...errorResponses(400, 401, 403, 413, 415, 422),
          ...described(
            409,
            '`pet_not_available`, `application_exists`, `open_application_limit` or `idempotency_in_progress`.',
          ),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (body.consent.dataProcessing !== true) throw applicationError('consent_required');
      const now = clock();
      // The identity hashes the body; erasing the applicant forgets the record (store.ts).
      const idempotency = idempotencyInput(request, 'createApplication', body, clock);
      const result = await store.submit(
        {
          accountId: request.principal!.account.id,
          petId: body.petId,
          applicant: body.applicant,
          answers: body.answers,
          keyId: request.principal!.keyId,
          max,
          now: idempotency?.now ?? now,
        },
        idempotency,
      );
      return settle(request, reply, '', result, 201, body.petId);
    },
  );

  app.get(
    '/applications',
    {
      config: { access: { scopes: ['applications:read'] } },
      schema: {
        operationId: 'listApplications',
        tags: TAGS,
        summary: 'List applications',
        description:
          "The account's applications (every account's with `applications:manage`), filtered by `status` (a " +
          'comma list), `petId` and `applicantId`, newest first unless `sort=oldest`; `limit` + `cursor` + ' +
          '`Link: rel="next"` as every list.',
        querystring: ListApplicationsQuery,
        response: {
          200: { ...Applications, headers: { Link: linkHeader('Present when another page exists.') } },
          ...errorResponses(400, 401, 403),
        },
      },
    },
    async (request, reply) => {
      const { limit = 20, status, petId, applicantId, sort = 'newest', cursor } = request.query;
      const after = cursor === undefined ? undefined : decodeCursor(cursor);
      const actor = actorOf(request);
      const statuses =
        status === undefined ? undefined : ([...new Set(status.split(','))] as ApplicationStatus[]);
      const rows =
        petId !== undefined && petId > MAX_ID
          ? []
          : await store.list({
              accountId: actor.manager ? undefined : actor.accountId,
              statuses,
              petId,
              applicantId,
              sort,
              after,
              limit: limit + 1,
            });
      const page = sendPage(
        reply,
        rows.map((row) => ({ id: row.application.seq, row })),
        {
          path: '/v1/applications',
          limit,
          filters: { status, petId, applicantId, sort: request.query.sort },
        },
      );
      return page.map(({ row }) => renderApplication(row.application, row.applicant));
    },
  );

  app.get(
    '/applications/:applicationId',
    {
      config: { access: { scopes: ['applications:read'] } },
      schema: {
        operationId: 'getApplication',
        tags: TAGS,
        summary: 'Get an application',
        description:
          "Your account's application, or any with `applications:manage`; `If-None-Match` answers 304.",
        params: ApplicationIdParams,
        response: {
          200: { ...ref(Application), headers: ETAG },
          304: { type: 'null', description: 'Not modified.' },
          ...errorResponses(400, 401, 403),
          ...described(404, '`application_not_found`: no such application, or not yours.'),
        },
      },
    },
    async (request, reply) => {
      const id = request.params.applicationId;
      const found = visibleOrThrow(request, id, await store.get(id));
      if (notModified(request, reply, strongEtag(found.application.version))) return reply;
      return answer(reply, found);
    },
  );

  app.patch(
    '/applications/:applicationId',
    {
      config: { access: { scopes: ['applications:write'] } },
      preValidation: async (request) => requireDeclaredBody(request),
      schema: {
        operationId: 'updateApplication',
        tags: TAGS,
        summary: 'Change an application',
        description:
          'JSON Merge Patch of `answers` (null removes one) and `applicant` (`name`, `phone`, `address`; the ' +
          'email identifies the applicant and does not change), only in `submitted` or `needs_info`; from ' +
          '`needs_info` the application returns to `in_review`. `If-Match` and `Idempotency-Key` honoured.',
        params: ApplicationIdParams,
        headers: IfMatchHeaders,
        body: mergePatchBody(ApplicationPatch),
        response: {
          200: { ...ref(Application), headers: { ...ETAG, ...REPLAYED } },
          ...errorResponses(400, 401, 403, 413, 415, 422),
          ...described(404, '`application_not_found`.'),
          ...described(
            409,
            '`invalid_transition` (not `submitted` or `needs_info`) or `idempotency_in_progress`.',
          ),
          ...described(412, '`precondition_failed`: If-Match does not match.'),
        },
      },
    },
    async (request, reply) => {
      const id = request.params.applicationId;
      const body = request.body as unknown as ApplicationPatch;
      const matches = ifMatchOf(request);
      const idempotency = idempotencyInput(request, 'updateApplication', [id, body], clock);
      const result = await store.patch(
        {
          id,
          applicant: body.applicant,
          request: {
            actor: actorOf(request),
            ifMatch: matches && ((version) => matches(strongEtag(version))),
            answers: body.answers,
            now: idempotency?.now ?? clock(),
          },
        },
        idempotency,
      );
      return settle(request, reply, id, result, 200);
    },
  );

  const ACTIONS: {
    action: Action;
    operationId: string;
    summary: string;
    scope: string;
    body?: object;
    doc: string;
  }[] = [
    {
      action: 'review',
      operationId: 'reviewApplication',
      summary: 'Start reviewing',
      scope: 'applications:manage',
      doc: '`submitted` → `in_review`.',
    },
    {
      action: 'request-info',
      operationId: 'requestApplicationInfo',
      summary: 'Ask the applicant for more',
      scope: 'applications:manage',
      body: RequestInfoBody,
      doc: '`in_review` → `needs_info`, with `message`.',
    },
    {
      action: 'approve',
      operationId: 'approveApplication',
      summary: 'Approve',
      scope: 'applications:manage',
      doc: "`in_review` → `approved`: in the same transaction a store order is placed for the application's account (the pet must be `available`) and `orderId` set.",
    },
    {
      action: 'reject',
      operationId: 'rejectApplication',
      summary: 'Reject',
      scope: 'applications:manage',
      body: RejectBody,
      doc: '`submitted`, `in_review` or `needs_info` → `rejected`, with `reason` (and `note`).',
    },
    {
      action: 'withdraw',
      operationId: 'withdrawApplication',
      summary: 'Withdraw',
      scope: 'applications:write',
      body: WithdrawBody,
      doc: "Your own (or any with `applications:manage`): any open status → `withdrawn`; an approved one's order is cancelled with it and the pet becomes `available`.",
    },
  ];

  for (const spec of ACTIONS) {
    app.post(
      `/applications/:applicationId/${spec.action}`,
      {
        config: { access: { scopes: [spec.scope] } },
        schema: {
          operationId: spec.operationId,
          tags: TAGS,
          summary: spec.summary,
          description: `${spec.doc} Any other move answers 409 \`invalid_transition\` naming the current status. \`If-Match\` and \`Idempotency-Key\` honoured.`,
          params: ApplicationIdParams,
          headers: IfMatchHeaders,
          ...(spec.body ? { body: spec.body } : {}),
          response: {
            200: { ...ref(Application), headers: { ...ETAG, ...REPLAYED } },
            ...errorResponses(400, 401, 403, 413, 415, 422),
            ...described(404, '`application_not_found`.'),
            ...described(
              409,
              '`invalid_transition`, `pet_not_available` (approve) or `idempotency_in_progress`.',
            ),
            ...described(412, '`precondition_failed`: If-Match does not match.'),
          },
        },
      },
      async (request, reply) => {
        const body = (request.body ?? {}) as { message?: string; reason?: string; note?: string };
        if (!spec.body && (typeof body !== 'object' || Array.isArray(body) || Object.keys(body).length > 0)) {
          throw new ApiError('validation_failed', {
            message: 'Invalid request: this action takes no body (or {}).',
            details: [{ field: 'body', message: 'must be empty' }],
          });
        }
        const id = request.params.applicationId;
        const matches = ifMatchOf(request);
        const idempotency = idempotencyInput(request, spec.operationId, [id, body], clock);
        const result = await store.act(
          {
            id,
            request: {
              action: spec.action,
              actor: actorOf(request),
              ifMatch: matches && ((version) => matches(strongEtag(version))),
              message: body.message,
              reason: body.reason,
              note: body.note,
              now: idempotency?.now ?? clock(),
            },
          },
          idempotency,
        );
        return settle(request, reply, id, result, 200);
      },
    );
  }
};
