/**
 * What a resource module gives the app: its routes (registered under /v1), the component schemas it
 * references with `$ref`, its OpenAPI tag, and what the shared pieces collect from every module (scopes,
 * error codes, settings, event types, background work, seed). src/modules/index.ts lists the modules;
 * src/app.ts, src/config.ts, src/server.ts and the CLI read that list (src/modules/declared.ts merges the
 * declarations), so adding a resource touches neither the app nor the cross-cutting pieces.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Registry } from 'prom-client';
import type { TSchema } from 'typebox';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { Cursors } from '../http/cursors.js';
import type { ErrorCatalogue } from '../http/errors.js';

export interface ModuleContext {
  database: Database;
  clock: Clock;
  /**
   * The service's settings, for modules with their own (e.g. orders' MAX_OPEN_ORDERS). Any may be absent
   * (tests build apps with a few), so a module falls back to its default.
   */
  config: Partial<Config>;
  /** The modules the app serves, for a module whose routes list what the others declare (events' types). */
  modules: readonly ApiModule[];
  /** Issues and reads every list's cursors (http/cursors.ts), with the secret every instance shares. */
  cursors: Cursors;
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

/**
 * The settings modules add to `Config`, one property per declared variable. Each module adds its own by
 * augmenting this interface (`declare module '../module.js' { interface ModuleSettings { … } }`) beside
 * its `settings`, so `config.<name>` is typed where it is read.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface ModuleSettings {}

/** An environment variable a module reads, merged into src/config.ts's table (and so .env.example). */
export interface SettingDeclaration<K extends keyof ModuleSettings = keyof ModuleSettings> {
  /** The environment variable, e.g. `MAX_OPEN_ORDERS`. */
  name: string;
  /** The property of `Config` it becomes. */
  key: K;
  /** As an env file would write it; undefined: unset. */
  default: string | undefined;
  /** One line of meaning (.env.example; docs/operations.md says more). */
  description: string;
  /** The value (undefined when unset or empty) as the setting; throws an Error saying what is wrong. */
  parse(raw: string | undefined): ModuleSettings[K];
}

/** A setting, its `parse` checked against the type its module gave the key in ModuleSettings. */
export function setting<K extends keyof ModuleSettings>(
  declaration: SettingDeclaration<K>,
): SettingDeclaration {
  return declaration;
}

/**
 * The event types modules emit, one property each (`'pet.created': true`), added by the emitting module by
 * augmenting this interface beside its `events`, so the appenders take only declared types.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface EventTypes {}
export type EventType = keyof EventTypes & string;

/** An event type a module emits, collected into the events feed's types and its Event component. */
export interface EventDeclaration {
  type: EventType;
  /** The component (with `$id`) that is the event's `data.object`; several types may share one. */
  object: TSchema;
  /** What the object is, for the Event component's description (e.g. "the pet id and its profile"). */
  describe?: string;
}

/** What a module's demo data step gets from `pet-adoption seed --pets N`. */
export interface SeedContext {
  database: Database;
  /** How many demo pets the command adds (the pets module adds them; others add to them). */
  count: number;
  now: number;
  onProgress(done: number): void;
}

export interface ApiModule {
  name: string;
  /** The OpenAPI tag of the module's operations. */
  tag?: { name: string; description: string };
  /**
   * Schemas with an `$id`, registered once (validation, serialisation, `components.schemas`); a function of
   * the served modules when they depend on the others' declarations (events' Event component).
   */
  components?: TSchema[] | ((modules: readonly ApiModule[]) => TSchema[]);
  /** The scopes its routes declare; src/modules/scopes.ts collects them from the module list. */
  scopes?: readonly ScopeDeclaration[];
  routes: FastifyPluginAsyncTypebox<ModuleContext>;
  /** Its background work, if any (e.g. webhooks' dispatcher); src/server.ts starts one per module. */
  background?(context: BackgroundContext): BackgroundTask;
  /** Deletes what the module keeps for a limited time (run hourly by the server); `now` in epoch ms. */
  purge?(database: Database, now: number): Promise<unknown>;
  /** Its error codes (`defineErrors(...).catalogue`), merged into the one catalogue. */
  errors?: ErrorCatalogue;
  /** The environment variables it reads. */
  settings?: readonly SettingDeclaration[];
  /** The event types it emits. */
  events?: readonly EventDeclaration[];
  /**
   * Its share of `pet-adoption seed --pets N`, run in module order (pets first): `label` is what the
   * command shows while it runs, `run` returns once written.
   */
  seed?: {
    label: string;
    /** What it adds, for the command's help: a clause following "Adds", joined to the others by commas. */
    help: string;
    run(context: SeedContext): Promise<unknown>;
  };
}
