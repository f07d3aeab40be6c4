/**
 * SQLite statements as spans of the request that runs them. better-sqlite3 has no OpenTelemetry
 * instrumentation, so the statement wrapper (costs.ts) calls `traced` when tracing is on: a CLIENT span per
 * run of a statement, child of the active span, named and described as the database semantic conventions say
 * (`db.system.name`, `db.operation.name`, `db.collection.name`, `db.query.text`), the names the PostgreSQL
 * instrumentation uses too. As the PostgreSQL and Redis instrumentations are configured (telemetry/start.ts),
 * work outside any request (background passes) opens no trace of its own.
 *
 * Everything a span needs from the SQL text is worked out once, when the statement is prepared; the text
 * holds placeholders, never values, so it carries no personal data. While tracing is off none of this runs:
 * statements get the counting wrapper only.
 */
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { SERVICE_VERSION } from '../version.js';

/** What a span says about one prepared statement. */
export interface StatementDescription {
  readonly name: string;
  readonly attributes: Attributes;
}

const VERBS = new Set(['SELECT', 'INSERT', 'REPLACE', 'UPDATE', 'DELETE']);
/** Strings, quoted identifiers, comments, parentheses, words; anything else one character at a time. */
const TOKEN =
  /'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\]|--[^\n]*|\/\*[\s\S]*?\*\/|[()]|[A-Za-z_][\w$]*|\S/g;

/** A quoted identifier as written in the text, without its quotes; undefined for a word that is not a name. */
function identifier(token: string | undefined): string | undefined {
  if (token === undefined) return undefined;
  if (/^["`[]/.test(token)) return token.slice(1, -1);
  return /^[A-Za-z_][\w$]*$/.test(token) ? token : undefined;
}

/**
 * The operation (the main statement's verb, after any WITH clause) and the first table it names, from
 * the statement's own tokens at the outermost level; a table-valued function is not a table.
 */
export function describeStatement(sql: string): StatementDescription {
  const top: string[] = [];
  /** Indexes in `top` of words followed by "(": function calls (`FROM pragma_data_version()`), not tables. */
  const calls = new Set<number>();
  let depth = 0;
  let previousWasTop = false;
  for (const [token] of sql.matchAll(TOKEN)) {
    if (token.startsWith('--') || token.startsWith('/*')) continue;
    if (token === '(') {
      if (depth === 0 && previousWasTop) calls.add(top.length - 1);
      depth++;
      previousWasTop = false;
    } else if (token === ')') {
      depth = Math.max(0, depth - 1);
      previousWasTop = false;
    } else if (depth === 0 && !token.startsWith("'")) {
      top.push(token);
      previousWasTop = true;
    } else previousWasTop = false;
  }
  const upper = top.map((token) => token.toUpperCase());
  const first = upper[0] ?? '';
  // After a WITH clause (its queries are inside parentheses) the first verb is the statement's own.
  const at = first === 'WITH' ? upper.findIndex((word) => VERBS.has(word)) : 0;
  const operation = at >= 0 && VERBS.has(upper[at]!) ? upper[at]! : first || 'UNKNOWN';
  // The name after a keyword, unless a subquery ("FROM (") or a function call ("FROM f()") comes instead;
  // INSERT's "(" after the table opens its column list.
  const nameAfter = (keyword: number, columns = false): string | undefined =>
    keyword >= 0 && !calls.has(keyword) && (columns || !calls.has(keyword + 1))
      ? identifier(top[keyword + 1])
      : undefined;
  let table: string | undefined;
  if (operation === 'INSERT' || operation === 'REPLACE') table = nameAfter(upper.indexOf('INTO', at), true);
  else if (operation === 'UPDATE') table = nameAfter(upper[at + 1] === 'OR' ? at + 2 : at);
  else if (operation === 'DELETE' || operation === 'SELECT') table = nameAfter(upper.indexOf('FROM', at));
  const attributes: Attributes = {
    'db.system.name': 'sqlite',
    'db.operation.name': operation,
    'db.query.text': sql,
  };
  if (table !== undefined) attributes['db.collection.name'] = table;
  return { name: table === undefined ? operation : `${operation} ${table}`, attributes };
}

let tracer: Tracer | undefined;

/**
 * Runs `execute` as a span described by `description` when a recorded span is active (a request's), else
 * plainly.
 * A thrown error ends the span with the error's code (SQLITE_BUSY, …) as `error.type`, and is rethrown.
 */
export function traced<T>(description: StatementDescription, execute: () => T): T {
  const parent = context.active();
  // No request, or one the sampler left out: a statement has no children, so no span is needed to carry on.
  if (trace.getSpan(parent)?.isRecording() !== true) return execute();
  tracer ??= trace.getTracer('pet-adoption-sqlite', SERVICE_VERSION);
  const span: Span = tracer.startSpan(
    description.name,
    { kind: SpanKind.CLIENT, attributes: description.attributes },
    parent,
  );
  try {
    return execute();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    span.setAttribute('error.type', typeof code === 'string' ? code : 'Error');
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw error;
  } finally {
    span.end();
  }
}
