/**
 * What a module's test fixture says (`src/modules/<module>/fixtures.ts`, default export made with
 * `defineFixture`): how to build a valid request body for each of its operations that takes one, how to get
 * a real id for each path parameter its routes declare, what the OpenAPI drift test must see it answer and
 * the requests that produce those answers. The suites that go over every module (test/security.test.ts,
 * test/openapi.test.ts) find the files from the module list (test/support/fixtures.ts) and fail when a
 * module has none: a new resource brings its own file and edits no central list.
 *
 * Test code kept beside the module it describes: excluded from the build (tsconfig.json), imported by no
 * production file (lint), and, like all of src/, importing nothing from test/ (what the suites lend it comes
 * through FixtureContext and DriftSession).
 */
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Database } from '../db/database.js';
import type { EventType } from './module.js';

export interface FixtureContext {
  app: FastifyInstance;
  /** The app's database, for records no API call makes (a webhook delivery is made by the dispatcher). */
  database: Database;
  /** A valid key with every scope the module's operations need. */
  key: string;
  /** A real id for another path parameter (e.g. a pet body needing a category), from its own fixture. */
  id(param: string): Promise<string>;
  /** Appends an event of `type` to the outbox, as a change's transaction would. */
  appendEvent(type: EventType): Promise<void>;
}

/** One drift test of test/openapi.test.ts, given to a module's `drift`. */
export interface DriftSession {
  /** Sends a request (to `app`, else the suite's) and asserts that the answer agrees with the document. */
  call(label: string, options: InjectOptions, app?: FastifyInstance): Promise<LightMyRequestResponse>;
  /** The suite's key (every scope) as an Authorization header. */
  auth(): { authorization: string };
  app: FastifyInstance;
  database: Database;
  /** The app's clock, fixed by the suite. */
  now(): number;
  /** Appends an event of `type` to the outbox, as a change's transaction would. */
  appendEvent(type: EventType): Promise<void>;
}

export interface ResourceFixture {
  /** A valid request body per operationId of the module that takes one, so a valid call answers 2xx. */
  bodies?: Record<string, (ctx: FixtureContext) => unknown>;
  /**
   * Per path parameter name (`petId` of `/pets/{petId}`): an id of a record that exists, made via the API.
   * `operationId` is the operation the id is for, when the caller says (see `fresh`).
   */
  ids?: Record<string, (ctx: FixtureContext, operationId?: string) => Promise<string | number>>;
  /**
   * Operations whose path ids and body are made anew for every request (`Fixtures.request`), because a
   * valid call uses them up: an order action moves the order on, placing an order holds its pet.
   */
  fresh?: string[];
  /**
   * Per operationId of the module, every status the OpenAPI drift test must see it answer; the drift test
   * fails on an operation of the document that no fixture lists.
   */
  driftStatuses?: Record<string, number[]>;
  /**
   * The requests of the module's own drift test: it must produce every status of `driftStatuses`. Without
   * one, the drift test's cross-cutting sessions must (pets and categories, which they exercise).
   */
  drift?: (session: DriftSession) => Promise<void>;
  /** Operations served without a key (`access: 'asset'` or `'public'`); every other one demands one. */
  keyless?: string[];
  /**
   * Headers documented on a response (`'<operationId> <status>'`) but sent only sometimes: `link` when
   * another page exists, `idempotent-replayed` on a replay. Every other documented header must be present.
   */
  conditionalHeaders?: Record<string, string[]>;
}

export function defineFixture(fixture: ResourceFixture): ResourceFixture {
  return fixture;
}
