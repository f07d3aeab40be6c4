/**
 * What a resource module gives the app: its routes (registered under /v1), the component schemas it
 * references with `$ref`, and its OpenAPI tag. src/modules/index.ts lists the modules; src/app.ts builds
 * the app from that list, so adding a resource touches neither the app nor the cross-cutting pieces.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Registry } from 'prom-client';
import type { TSchema } from 'typebox';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';

export interface ModuleContext {
  database: Database;
  clock: Clock;
  /**
   * The service's settings, for modules with their own (e.g. orders' MAX_OPEN_ORDERS). Any may be absent
   * (tests build apps with a few), so a module falls back to its default.
   */
  config: Partial<Config>;
}

/** A scope a module's routes require, declared by the module that owns it. */
export interface ScopeDeclaration {
  name: string;
  /** What it allows, in words (the OpenAPI document's scope table). */
  description: string;
  /** Other scopes a key with this one may also use (e.g. `write` implies `read` of the same resource). */
  implies?: readonly string[];
}

/** What a module's background work gets from the server that runs it. */
export interface BackgroundContext {
  database: Database;
  config: Config;
  /** The registry /metrics serves. */
  registry: Registry;
  logger: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  /** True while API requests keep the event loop busy: background work should then make room. */
  busy: () => boolean;
}

/** Work a module runs beside the API in `serve` (not in apps built by tests, which drive it themselves). */
export interface BackgroundTask {
  /** Called once the server listens. */
  start(): void;
  /** A write was answered (any response to a method other than GET and HEAD): there may be new work. */
  wake?(): void;
  /** Called at shutdown, after the API has stopped answering and before the stores close. */
  stop(): Promise<void>;
}

export interface ApiModule {
  name: string;
  /** The OpenAPI tag of the module's operations. */
  tag?: { name: string; description: string };
  /** Schemas with an `$id`, registered once (validation, serialisation, `components.schemas`). */
  components?: TSchema[];
  /** The scopes its routes declare; src/modules/scopes.ts collects them from the module list. */
  scopes?: readonly ScopeDeclaration[];
  routes: FastifyPluginAsyncTypebox<ModuleContext>;
  /** Its background work, if any (e.g. webhooks' dispatcher); src/server.ts starts one per module. */
  background?(context: BackgroundContext): BackgroundTask;
  /** Deletes what the module keeps for a limited time (run hourly by the server); `now` in epoch ms. */
  purge?(database: Database, now: number): Promise<unknown>;
}
