/**
 * OpenTelemetry tracing, over real processes: the built server (`pet-adoption serve`, what `npm start` runs)
 * with the standard OTEL_* variables pointing at an OTLP receiver in this test, which decodes what the
 * official exporter sends (http/json). On each backend: a request carrying a `traceparent` yields spans in
 * the caller's trace (with a PostgreSQL statement and a Redis command on that backend, a span per statement
 * on SQLite), its log line carries the trace id, and a webhook delivery attempt is a span of its own, linked
 * to the request that wrote the event, whose `traceparent` the receiver gets.
 * `npm test` builds first; run `npm run build` before running this file alone.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { tracingRequested } from '../src/telemetry/context.js';
import { SERVICE_VERSION } from '../src/version.js';
import { backends } from './helpers.js';
import {
  cli,
  CLI,
  environmentFor,
  killAll,
  serve,
  terminate,
  type Environment,
  type Server,
} from '../support/processes.js';
import { Receiver } from './support/webhooks.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  links?: { traceId: string; spanId: string }[];
  attributes?: { key: string; value: Record<string, unknown> }[];
}

/** An OTLP/HTTP traces endpoint that keeps every span it is sent (JSON encoding). */
class OtlpReceiver {
  readonly spans: OtlpSpan[] = [];
  readonly resources: Record<string, Record<string, unknown> | undefined>[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly server: HttpServer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces' && req.headers['content-type']?.startsWith('application/json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: {
            resource: { attributes: { key: string; value: Record<string, unknown> }[] };
            scopeSpans: { spans: OtlpSpan[] }[];
          }[];
        };
        for (const rs of body.resourceSpans) {
          this.resources.push(Object.fromEntries(rs.resource.attributes.map((a) => [a.key, a.value])));
          for (const ss of rs.scopeSpans) this.spans.push(...ss.spans);
        }
        for (const wake of this.waiters) wake();
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Resolves once `done` holds for the spans received (the test's timeout is the guard). */
  async waitUntil(done: (spans: OtlpSpan[]) => boolean): Promise<OtlpSpan[]> {
    while (!done(this.spans)) await new Promise<void>((resolve) => this.waiters.add(resolve));
    this.waiters.clear();
    return this.spans;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** OTLP's SpanKind numbering (SPAN_KIND_CLIENT = 3). */
const SPAN_KIND_CLIENT = 3;
const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const attribute = (span: OtlpSpan, key: string) => span.attributes?.find((a) => a.key === key)?.value;

test('tracing is requested by an OTLP endpoint or a traces exporter, as the SDKs read them', () => {
  assert.equal(tracingRequested({}), false);
  assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
  assert.equal(
    tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }),
    true,
  );
  assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp' }), true);
  assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'none' }), false);
  assert.equal(
    tracingRequested({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }),
    false,
  );
  assert.equal(
    tracingRequested({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }),
    false,
  );
});

for (const backend of await backends()) {
  const pg = backend.name.startsWith('postgres');
  describe(`tracing [${backend.name}]`, () => {
    let environment: Environment;
    let otlp: OtlpReceiver;
    let receiver: Receiver;
    let server: Server | undefined;
    let key: string;
    let webhookUrl: string;
    let env: Record<string, string>;

    before(async () => {
      assert.ok(existsSync(CLI), `${CLI} is missing: run \`npm run build\` (npm test does)`);
      environment = await environmentFor(backend);
      otlp = new OtlpReceiver();
      receiver = new Receiver();
      webhookUrl = await receiver.start();
      env = { ...environment.env, WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50' };
      const migrated = await cli(['migrate'], env);
      assert.equal(migrated.code, 0, migrated.stderr);
      const created = await cli(['keys', 'create', '--account', 'traced', '--json'], env);
      assert.equal(created.code, 0, created.stderr);
      key = (JSON.parse(created.stdout.trim()) as { key: string }).key;
      server = await serve('traced', {
        ...env,
        LOG_LEVEL: 'info',
        OTEL_EXPORTER_OTLP_ENDPOINT: await otlp.start(),
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'pets-under-test',
        // Export each span soon after it ends rather than every 5 s.
        OTEL_BSP_SCHEDULE_DELAY: '50',
      });
    });
    after(async () => {
      await killAll();
      await otlp?.close();
      await receiver?.close();
      await environment?.cleanup();
    });

    async function call(method: string, path: string, traceparent: string, body?: unknown) {
      const res = await fetch(`${server!.base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          traceparent,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as unknown };
    }

    test('a request with a traceparent continues the caller’s trace, with its database and Redis work', async () => {
      const traceId = hex(16);
      const callerSpan = hex(8);
      const res = await call('GET', '/pets?limit=5', `00-${traceId}-${callerSpan}-01`);
      assert.equal(res.status, 200, JSON.stringify(res.json));
      const isDb = (s: OtlpSpan) => attribute(s, 'db.system.name') ?? attribute(s, 'db.system');
      const isRedis = (s: OtlpSpan) => isDb(s)?.stringValue === 'redis';
      const spans = await otlp.waitUntil((all) => {
        const mine = all.filter((s) => s.traceId === traceId);
        const request = mine.some((s) => s.name === 'request');
        return pg
          ? request && mine.some((s) => isDb(s) && !isRedis(s)) && mine.some(isRedis)
          : request && mine.some((s) => attribute(s, 'db.collection.name')?.stringValue === 'pets');
      });
      const mine = spans.filter((s) => s.traceId === traceId);
      const request = mine.find((s) => s.name === 'request')!;
      assert.equal(request.parentSpanId, callerSpan, 'the request span is the caller span’s child');
      assert.equal(attribute(request, 'http.route')?.stringValue, '/v1/pets');
      const ids = new Set(mine.map((s) => s.spanId));
      for (const span of mine) {
        if (span !== request) assert.ok(ids.has(span.parentSpanId!), `${span.name} belongs to the request`);
      }
      if (pg) {
        const statement = mine.find((s) => isDb(s) && !isRedis(s))!;
        assert.equal(isDb(statement)?.stringValue, 'postgresql', JSON.stringify(statement));
      } else {
        // No instrumentation exists for better-sqlite3: the service's own spans, one per statement run.
        const statements = mine.filter((s) => isDb(s)?.stringValue === 'sqlite');
        assert.ok(statements.every((s) => s.parentSpanId === request.spanId && s.kind === SPAN_KIND_CLIENT));
        const page = statements.find((s) => attribute(s, 'db.collection.name')?.stringValue === 'pets')!;
        assert.equal(page.name, 'SELECT pets');
        assert.equal(attribute(page, 'db.operation.name')?.stringValue, 'SELECT');
        assert.match(String(attribute(page, 'db.query.text')?.stringValue), /^SELECT .* FROM pets /);
      }
      assert.equal(otlp.resources[0]!['service.name']?.stringValue, 'pets-under-test');
      assert.equal(otlp.resources[0]!['service.version']?.stringValue, SERVICE_VERSION);

      // The request's log line carries the trace id, with the service, its version and the level's name.
      await waitFor(() => logLines(server!).some((l) => l.trace_id === traceId));
      const line = logLines(server!).find((l) => l.trace_id === traceId)!;
      assert.equal(line.msg, 'request completed');
      assert.equal(line.level, 'info');
      assert.equal(line.service, 'pet-adoption');
      assert.match(String(line.version), /^\d+\.\d+\.\d+/);
      assert.equal((line.res as { statusCode: number }).statusCode, 200);
      assert.equal(line.span_id, request.spanId);
    });

    test('a webhook delivery attempt is a span linked to the writing request, and the receiver gets its traceparent', async () => {
      const endpoint = await call('POST', '/webhook-endpoints', `00-${hex(16)}-${hex(8)}-01`, {
        url: webhookUrl,
        events: ['pet.created'],
      });
      assert.equal(endpoint.status, 201, JSON.stringify(endpoint.json));
      const writeTrace = hex(16);
      const pet = await call('POST', '/pets', `00-${writeTrace}-${hex(8)}-01`, {
        name: 'Traced',
        categoryId: 1,
      });
      assert.equal(pet.status, 201, JSON.stringify(pet.json));
      const [delivered] = await receiver.waitFor(1);
      const traceparent = delivered!.headers.traceparent;
      assert.match(
        traceparent ?? '',
        /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/,
        'the delivery carries a traceparent',
      );
      const [, attemptTrace, attemptSpan] = traceparent!.split('-');
      assert.notEqual(attemptTrace, writeTrace, 'the attempt is a trace of its own');

      const spans = await otlp.waitUntil((all) => all.some((s) => s.spanId === attemptSpan));
      const attempt = spans.find((s) => s.spanId === attemptSpan)!;
      assert.equal(attempt.name, 'webhook delivery attempt');
      assert.equal(attempt.traceId, attemptTrace);
      assert.equal(attempt.parentSpanId || undefined, undefined, 'a root span');
      assert.equal(attempt.links?.length, 1, JSON.stringify(attempt));
      const link = attempt.links![0]!;
      assert.equal(link.traceId, writeTrace, 'linked to the request that wrote the event');
      await otlp.waitUntil((all) => all.some((s) => s.spanId === link.spanId));
      const linked = otlp.spans.find((s) => s.spanId === link.spanId)!;
      assert.equal(linked.traceId, writeTrace);
      assert.equal(attribute(attempt, 'http.response.status_code')?.intValue, 200);
    });

    test('the traced server still shuts down cleanly', async () => {
      const exit = await terminate(server!);
      assert.equal(exit.code, 0, server!.output());
    });
  });
}

function logLines(server: Server): Record<string, unknown>[] {
  const [, stdout = ''] = server.output().split('\n--- stdout ---\n');
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

/** Polls a condition on the log (the log is written asynchronously); the test's timeout is the guard. */
async function waitFor(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
}
