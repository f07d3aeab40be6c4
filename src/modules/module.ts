/**
 * What a resource module gives the app: its routes (registered under /v1), the component schemas it
 * references with `$ref`, and its OpenAPI tag. src/modules/index.ts lists the modules; src/app.ts builds
 * the app from that list, so adding a resource touches neither the app nor the cross-cutting pieces.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
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

export interface ApiModule {
  name: string;
  /** The OpenAPI tag of the module's operations. */
  tag?: { name: string; description: string };
  /** Schemas with an `$id`, registered once (validation, serialisation, `components.schemas`). */
  components?: TSchema[];
  /** The scopes its routes declare; src/modules/scopes.ts collects them from the module list. */
  scopes?: readonly ScopeDeclaration[];
  routes: FastifyPluginAsyncTypebox<ModuleContext>;
}
