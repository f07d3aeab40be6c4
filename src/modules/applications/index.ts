/**
 * Adoption applications: the form, applicants (personal data: export, erasure, retention) and applications
 * with their workflow. Orders and pets know nothing of this module: it follows their writes through their
 * within-transaction listeners, registered when this file is loaded (the module list loads it in every
 * process: the server, the CLI and tests).
 */
import type { ApiModule } from '../module.js';
import { orderMoves, type OrderMove } from '../orders/index.js';
import { petRemovals, type PetRemoval } from '../pets/index.js';
import type { TransactionListener } from '../within.js';
import { actionRoutes } from './action-routes.js';
import { applicantRoutes } from './applicant-routes.js';
import { retentionTask } from './retention.js';
import { DEMO_ACCOUNT, seedApplications } from './seed.js';
import { applicationErrors } from './errors.js';
import { applicationRoutes } from './routes.js';
import {
  Applicant,
  ApplicantErasedObject,
  Application,
  ApplicationEventObject,
  ApplicationForm,
} from './schemas.js';
import { applicationScopes } from './scopes.js';
import { applicationSettings } from './settings.js';
import { applicationStore } from './factory.js';
import type { PostgresApplicationStore } from './store.postgres.js';
import type { SqliteApplicationStore } from './store.sqlite.js';

const followOrders: TransactionListener<OrderMove> = {
  sqlite: (database, moves) =>
    (database.repository(applicationStore) as SqliteApplicationStore).onOrderMoves(moves),
  postgres: (database, client, moves) =>
    (database.repository(applicationStore) as PostgresApplicationStore).onOrderMoves(client, moves),
};
const followPets: TransactionListener<PetRemoval> = {
  sqlite: (database, removals) =>
    (database.repository(applicationStore) as SqliteApplicationStore).onPetRemovals(removals),
  postgres: (database, client, removals) =>
    (database.repository(applicationStore) as PostgresApplicationStore).onPetRemovals(client, removals),
};
orderMoves.register(followOrders);
petRemovals.register(followPets);

const STATUS_EVENTS = [
  'in_review',
  'needs_info',
  'approved',
  'rejected',
  'withdrawn',
  'closed',
  'adopted',
] as const;

export const applicationsModule: ApiModule = {
  name: 'applications',
  tag: {
    name: 'applications',
    description:
      'Applications to adopt, the form they answer and the applicants (see docs/api.md, "Applications").',
  },
  components: [ApplicationForm, Applicant, Application, ApplicationEventObject, ApplicantErasedObject],
  scopes: applicationScopes,
  routes: async (app, context) => {
    await applicationRoutes(app, context);
    await actionRoutes(app, context);
    await applicantRoutes(app, context);
  },
  errors: applicationErrors.catalogue,
  settings: applicationSettings,
  background: retentionTask,
  seed: {
    label: 'Adding demo applications',
    help:
      `and applications for six of the newest available pets from the account ${DEMO_ACCOUNT}, in every ` +
      'status of the workflow (one adopted through its order)',
    run: ({ database, now }) => seedApplications(database, now),
  },
  events: [
    {
      type: 'application.submitted',
      object: ApplicationEventObject,
      describe: 'an application without applicant, answers, message or history',
    },
    { type: 'application.updated', object: ApplicationEventObject },
    ...STATUS_EVENTS.map((status) => ({
      type: `application.${status}` as const,
      object: ApplicationEventObject,
    })),
    {
      type: 'applicant.erased',
      object: ApplicantErasedObject,
      describe: "the erased applicant's id and time",
    },
  ],
};

declare module '../module.js' {
  interface EventTypes {
    'application.submitted': true;
    'application.updated': true;
    'application.in_review': true;
    'application.needs_info': true;
    'application.approved': true;
    'application.rejected': true;
    'application.withdrawn': true;
    'application.closed': true;
    'application.adopted': true;
    'applicant.erased': true;
  }
}

// Its interface: what other modules, the app and the CLI use of it (they import no other file of it).
export type { Action, Refusal } from './decisions.js';
export { applicationStore } from './factory.js';
export { renderApplication } from './render.js';
export { APPLICATION_ID, APPLICATION_STATUSES, REJECT_REASONS, type ApplicationStatus } from './schemas.js';
export type { FullApplication } from './store.js';
