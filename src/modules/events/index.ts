import { eventsOf } from '../declared.js';
import type { ApiModule } from '../module.js';
import { eventScopes } from './scopes.js';
import { EVENT_RETENTION_MS, eventRepository } from './repository.js';
import { eventRoutes } from './routes.js';
import { eventSchemas } from './schemas.js';

export { buildEvent, eventRepository, newEventId, previousValues, EVENT_RETENTION_MS } from './repository.js';
export type {
  EventRepository,
  NewEvent,
  PostgresEventAppender,
  PostgresEventDispatch,
  SqliteEventAppender,
  SqliteEventDispatch,
  UndispatchedEvent,
} from './repository.js';
export { eventTypeNames } from './schemas.js';
export { appendingEvents, eventValues } from './repository.postgres.js';

export const eventsModule: ApiModule = {
  name: 'events',
  tag: {
    name: 'events',
    description: 'Changes of pets and orders: the feed (webhooks deliver the same events).',
  },
  // Every served module's event types and objects (ApiModule.events) make the Event component.
  components: (modules) => [eventSchemas(eventsOf(modules)).Event],
  scopes: eventScopes,
  routes: eventRoutes,
  purge: (database, now) => database.repository(eventRepository).purge(now - EVENT_RETENTION_MS),
};
