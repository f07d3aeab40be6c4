import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { hasScope } from '../../http/access.js';
import { nextLink } from '../../http/paging.js';
import { errorResponses, linkHeader, rateLimitNote } from '../../http/responses.js';
import { eventsOf } from '../declared.js';
import type { ModuleContext } from '../module.js';
import { eventRepository } from './repository.js';
import { eventSchemas, type Event } from './schemas.js';

export const eventRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (
  app,
  { database, modules, cursors },
) => {
  const events = database.repository(eventRepository);
  // The types of the modules served: their declarations (ApiModule.events) make the query's enum.
  const { Events, ListEventsQuery } = eventSchemas(eventsOf(modules));

  app.get(
    '/events',
    {
      config: { access: { scopes: ['events:read'] } },
      schema: {
        operationId: 'listEvents',
        tags: ['events'],
        summary: 'List events',
        description:
          'Changes of pets, orders and applications, oldest first, at most `limit` (default 20), optionally of one `type`. ' +
          "`pet.*` events are visible to every key with `events:read`; `order.*` only to the order's account, " +
          "or to keys with `orders:manage`; `application.*` and `applicant.*` only to the application's account " +
          'while the key holds `applications:read`, or to keys with `applications:manage`. **Every** page carries `Link: <…>; rel="next"`, also an empty or ' +
          'short one: it points after the last event shown (or repeats the cursor when nothing was new), so a ' +
          'client polls by following it. The body is a plain JSON array of events, each exactly as webhook ' +
          `receivers get it. Events are kept 30 days. ${rateLimitNote}`,
        querystring: ListEventsQuery,
        response: {
          200: {
            ...Events,
            headers: {
              Link: linkHeader(
                'Always present: `<…>; rel="next"`, the page after this one (follow it to poll).',
              ),
            },
          },
          ...errorResponses(400, 401),
        },
      },
    },
    async (request, reply) => {
      const { limit = 20, type, cursor } = request.query;
      const binding = { path: '/v1/events', filters: { type } };
      const afterSeq = cursor === undefined ? undefined : cursors.readId(binding, cursor);
      const principal = request.principal!;
      const rows = await events.list({
        afterSeq,
        type,
        limit,
        viewer: {
          accountId: principal.account.id,
          allOrders: hasScope(request, 'orders:manage'),
          allApplications: hasScope(request, 'applications:manage'),
          ownApplications: hasScope(request, 'applications:read'),
        },
      });
      const last = rows.at(-1);
      const next = last === undefined ? cursor : cursors.issueId(binding, last.seq);
      reply.header('link', nextLink('/v1/events', limit, { type }, next));
      // The stored payloads are the events' JSON, served byte for byte as receivers get them.
      // A string is sent as is (no serializer); the type provider only knows the parsed shape.
      reply.type('application/json; charset=utf-8');
      return reply.send(`[${rows.map((row) => row.payload).join(',')}]` as unknown as Event[]);
    },
  );
};
