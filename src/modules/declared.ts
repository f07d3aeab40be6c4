/**
 * What the shared pieces collect from the modules' declarations (module.ts), merged over a module list: the
 * app passes the modules it serves, src/config.ts and the CLI the whole list (src/modules/index.ts). Pure
 * functions of the list they are given, so a module that needs the others' declarations (events lists every
 * module's event types) gets them handed in and imports no other module.
 */
import type { TSchema } from 'typebox';
import { mergeErrorCatalogues, type ErrorCatalogue } from '../http/errors.js';
import type { ApiModule, EventDeclaration, SettingDeclaration } from './module.js';

/** The one error catalogue: the HTTP layer's codes and every module's (`errors`). */
export function errorCatalogueOf(modules: readonly ApiModule[]): ErrorCatalogue {
  return mergeErrorCatalogues(modules.flatMap((module) => (module.errors ? [module.errors] : [])));
}

/** Each name once: two modules declaring the same one is a mistake, refused when the list is read. */
function unique<T>(items: T[], name: (item: T) => string, what: string): T[] {
  const seen = new Set<string>();
  for (const item of items) {
    if (seen.has(name(item))) throw new Error(`${what} ${name(item)} is declared twice`);
    seen.add(name(item));
  }
  return items;
}

/** Every event type the modules emit, in module order. */
export function eventsOf(modules: readonly ApiModule[]): EventDeclaration[] {
  return unique(
    modules.flatMap((module) => module.events ?? []),
    (event) => event.type,
    'the event type',
  );
}

/** Every environment variable the modules read, in module order. */
export function settingsOf(modules: readonly Pick<ApiModule, 'settings'>[]): SettingDeclaration[] {
  return unique(
    modules.flatMap((module) => module.settings ?? []),
    (setting) => setting.name,
    'the variable',
  );
}

/** The modules' component schemas; a module's may depend on the list (events' Event component). */
export function componentsOf(modules: readonly ApiModule[]): TSchema[] {
  return modules.flatMap((module) =>
    typeof module.components === 'function' ? module.components(modules) : (module.components ?? []),
  );
}
