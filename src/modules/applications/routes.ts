/** Applications over HTTP: parse, call the store, answer. The rules are in decisions.ts. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { ifMatch as ifMatchOf, notModified, strongEtag } from '../../http/conditional.js';
import { IdempotencyHeaders, idempotencyInput } from '../../http/idempotency/index.js';
import { mergePatchBody, requireDeclaredBody } from '../../http/merge-patch.js';
import { PageCache } from '../../http/page-cache.js';
import { sendPage } from '../../http/paging.js';
import { renderRows } from '../../http/row-guard.js';
import { errorResponses, linkHeader, locationHeader } from '../../http/responses.js';
import { MAX_ID, ref } from '../../http/schemas.js';
import type { ModuleContext } from '../module.js';
import { applicationError } from './errors.js';
import { renderApplication } from './render.js';
import { DEFAULT_MAX_OPEN_APPLICATIONS } from './settings.js';
import { applicationStore } from './factory.js';
import {
  Application,
  ApplicationIdParams,
  ApplicationPatch,
  Applications,
  IfMatchHeaders,
  ListApplicationsQuery,
  NewApplication,
  type ApplicationStatus,
} from './schemas.js';

import { actorOf, described, ETAG, REPLAYED, replies, TAGS } from './replies.js';

export const applicationRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (app, context) => {
  const { database, clock, config, cursors } = context;
  const store = database.repository(applicationStore);
  const { visibleOrThrow, answer, settle } = replies(store);
  const max = config.maxOpenApplications ?? DEFAULT_MAX_OPEN_APPLICATIONS;
  // List pages as sent (body and Link), exact: answered only while the database is at the version the page
  // was read at (http/page-cache.ts), so an erasure or any other write is never answered around.
  const pages = new PageCache<{ body: Buffer; link: string | undefined }>();

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
        headers: IdempotencyHeaders,
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
          200: {
            ...Applications,
            description: 'A page of applications, in the order asked for.',
            headers: { Link: linkHeader('Present when another page exists.') },
          },
          ...errorResponses(400, 401, 403),
        },
      },
    },
    async (request, reply) => {
      const { limit = 20, status, petId, applicantId, sort = 'newest', cursor } = request.query;
      const binding = {
        path: '/v1/applications',
        filters: { status, petId, applicantId, sort: request.query.sort },
      };
      // Whose applications this key may see is decided now, from its scopes as they are at this request;
      // the cache only keeps each audience's pages apart (every account's, or one account's).
      const actor = actorOf(request);
      // Read before the page, so a page is never labelled newer than its data (see http/page-cache.ts).
      const version = store.readVersion();
      const key = `${actor.manager ? '*' : actor.accountId} ${request.url}`;
      pages.sweep(version);
      const cached = pages.get(version, key);
      // A page is kept only under a URL whose cursor was checked (same cursor text, same query: same
      // verdict), so a cached page needs no second check. Otherwise it is checked before any database work:
      // a cursor not issued for this query costs nothing.
      const after = cached || cursor === undefined ? undefined : cursors.readId(binding, cursor);
      const page =
        cached ??
        (await pages.load(version, key, async () => {
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
          const kept = sendPage(
            reply,
            rows.map((row) => ({ id: row.application.seq, row })),
            { ...binding, limit, cursors },
          );
          const views = renderRows(request, kept, ({ row }) =>
            renderApplication(row.application, row.applicant),
          );
          const link = reply.getHeader('link');
          // Serialized by the route's own 200 schema (and its row guard), as Fastify would have sent the rows.
          return {
            body: Buffer.from(reply.serialize(views) as string),
            link: typeof link === 'string' ? link : undefined,
          };
        }));
      if (page.link !== undefined) reply.header('link', page.link);
      // With a JSON content type set, Fastify sends a Buffer as it is, without serializing again.
      return (reply as FastifyReply)
        .header('content-type', 'application/json; charset=utf-8')
        .send(page.body);
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
};
