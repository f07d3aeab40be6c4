/** The workflow's actions over HTTP: parse, call the store, answer. The rules are in decisions.ts. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ifMatch as ifMatchOf, strongEtag } from '../../http/conditional.js';
import { ApiError } from '../../http/errors.js';
import { idempotencyInput } from '../../http/idempotency/index.js';
import { errorResponses } from '../../http/responses.js';
import { ref } from '../../http/schemas.js';
import type { ModuleContext } from '../module.js';
import type { Action } from './decisions.js';
import { applicationStore } from './factory.js';
import {
  Application,
  ApplicationIdParams,
  IfMatchHeaders,
  RejectBody,
  RequestInfoBody,
  WithdrawBody,
} from './schemas.js';

import { actorOf, described, ETAG, REPLAYED, replies, TAGS } from './replies.js';

/** The workflow's actions: one POST route each (the table in docs/api.md, "Applications"). */
export const actionRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (app, { database, clock }) => {
  const store = database.repository(applicationStore);
  const { settle } = replies(store);
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
