/**
 * One stored row never fails a whole page. Fastify serializes a response with fast-json-stringify, which
 * throws when a value fits none of a union's branches (`lastStatusCode: integer 100..999 | null` holding 99,
 * say) or a required field is missing: one such row in a list would turn every page holding it into a 500
 * for every client. Writes check the limits the read schemas state and migrations repair older rows, so
 * this is the last line: when an array answer fails to serialize, its rows are serialized one by one and
 * those that cannot be are left out of the page, each logged with its id (never its content) and counted
 * in `pet_adoption_unreadable_rows_skipped_total`. The page then holds fewer rows than `limit`; its `Link`
 * still leads on. A single resource that cannot be serialized stays a 500: there is nothing to answer.
 *
 * Only a failing answer pays: the page is serialized whole first, as before.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { SerializerFactory } from '@fastify/fast-json-stringify-compiler';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { Counter, type Registry } from 'prom-client';

/** Where a skipped row is reported; the app fills in its logger and counter once they exist. */
export class SkippedRowSink {
  log?: FastifyBaseLogger;
  counter?: Counter<'route'>;

  report(route: string, row: unknown, error: unknown): void {
    this.counter?.inc({ route });
    // The message of a serializer error can quote the value: only its class is logged.
    this.log?.error(
      { route, rowId: idOf(row), error: error instanceof Error ? error.name : typeof error },
      'a stored row does not fit its read schema; left out of the page',
    );
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Reports a list row left out because it could not be rendered (see renderRows). */
    unreadableRows: SkippedRowSink;
  }
}

/**
 * A list's rows rendered one by one for its answer: a row whose rendering throws (a stored document that is
 * not JSON, an instant out of range) is left out and reported like a row that cannot be serialized.
 */
export function renderRows<R, T>(request: FastifyRequest, rows: readonly R[], render: (row: R) => T): T[] {
  const out: T[] = [];
  for (const row of rows) {
    try {
      out.push(render(row));
    } catch (error) {
      request.server.unreadableRows.report(request.routeOptions.url ?? request.url, row, error);
    }
  }
  return out;
}

/** A row's id for the log: `id` (or a listing's `pet.id`) when it is a plain number or a short token. */
function idOf(row: unknown): string | number | undefined {
  if (typeof row !== 'object' || row === null) return undefined;
  const record = row as { id?: unknown; pet?: { id?: unknown } };
  const id = record.id ?? record.pet?.id;
  if (typeof id === 'number' && Number.isSafeInteger(id)) return id;
  return typeof id === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(id) ? id : undefined;
}

/** Fastify's own serializer builder, with the per-row fallback for array answers. */
export function guardedSerializerBuilder(sink: SkippedRowSink): SerializerFactory {
  const build = SerializerSelector();
  return (externalSchemas, serializerOptions) => {
    const compile = build(externalSchemas, serializerOptions);
    return (route) => {
      const serialize = compile(route);
      return (data: unknown) => {
        try {
          return serialize(data);
        } catch (error) {
          if (!Array.isArray(data)) throw error;
          const kept: string[] = [];
          for (const row of data) {
            try {
              // The same serializer on a one-row array: `[<row>]`.
              kept.push(serialize([row]).slice(1, -1));
            } catch (rowError) {
              sink.report(route.url, row, rowError);
            }
          }
          return `[${kept.join(',')}]`;
        }
      };
    };
  };
}

export function skippedRowCounter(registry: Registry): Counter<'route'> {
  return new Counter({
    name: 'pet_adoption_unreadable_rows_skipped_total',
    help: 'Stored rows left out of a list page because they do not fit the read schema (see the log for ids).',
    labelNames: ['route'],
    registers: [registry],
  });
}
