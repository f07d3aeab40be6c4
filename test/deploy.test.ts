/**
 * The deployment files keep their promises. Images cannot be built here, so the Dockerfile and compose.yaml
 * are read and checked for what they promise; scripts/production-install-check.mjs (run by .ci/run) runs the
 * Dockerfile's stages on the machine itself. `.env.example` is what `npm run generate:env` makes of the
 * configuration table, and that table is what the configuration parser reads.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import { renderEnvExample } from '../scripts/generate-env.js';
import { loadConfig, VARIABLES } from '../src/config.js';
import { settingsOf } from '../src/modules/declared.js';
import { MODULES } from '../src/modules/index.js';
import { TRACING_VARIABLES } from '../src/telemetry/variables.js';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

/** Drain, then 3 s for idle connections, then at most 10 s for requests in flight (src/server.ts). */
const SHUTDOWN_AFTER_DRAIN_S = 3 + 10;

interface Stage {
  image: string;
  name: string | undefined;
  instructions: { keyword: string; args: string }[];
}

function dockerfile(): Stage[] {
  const stages: Stage[] = [];
  for (const raw of read('Dockerfile')
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [, keyword, args] = /^(\S+)\s*(.*)$/.exec(line)!;
    if (keyword!.toUpperCase() === 'FROM') {
      const [, image, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args!)!;
      stages.push({ image: image!, name, instructions: [] });
    } else stages.at(-1)!.instructions.push({ keyword: keyword!.toUpperCase(), args: args! });
  }
  return stages;
}

const all = (stage: Stage, keyword: string) =>
  stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);

test('.env.example is what `npm run generate:env` makes of src/config.ts', () => {
  assert.equal(read('.env.example'), renderEnvExample(), 'run `npm run generate:env` and commit the result');
});

test('.env.example lists the OpenTelemetry variables, each the service reads among them', () => {
  const example = read('.env.example');
  const names = new Set(TRACING_VARIABLES.map((v) => v.name));
  for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_SERVICE_NAME', 'OTEL_TRACES_SAMPLER']) {
    assert.ok(names.has(name), name);
  }
  for (const name of names) assert.match(example, new RegExp(`^# ${name}=$`, 'm'));
  const telemetry = ['context.ts', 'start.ts'].map((file) => read(`src/telemetry/${file}`)).join('\n');
  const used = [...telemetry.matchAll(/\benv\.(OTEL_[A-Z_]+)/g)].map((m) => m[1]!);
  assert.ok(used.includes('OTEL_EXPORTER_OTLP_ENDPOINT'), 'the pattern finds the variables');
  // The metrics and logs exporters stay off unless asked for; they are not tracing's business.
  for (const name of used.filter((n) => !/^OTEL_(METRICS|LOGS)_EXPORTER$/.test(n))) {
    assert.ok(names.has(name), `${name} is read by the service but missing from TRACING_VARIABLES`);
  }
});

test('the configuration table names exactly the variables the parser reads, with the parser’s defaults', () => {
  // config.ts reads its variables through the parsers in config-parsers.ts.
  const source = read('src/config.ts') + read('src/config-parsers.ts');
  // The service's own variables are read in config.ts; each module's by its declaration (ApiModule.settings).
  const parsed = new Set([
    ...[...source.matchAll(/\benv(?:\.|, ')([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!),
    ...settingsOf(MODULES).map((setting) => setting.name),
  ]);
  assert.ok(parsed.has('PORT') && parsed.has('PUBLIC_URL'), 'the pattern finds the variables');
  assert.ok(parsed.has('MAX_OPEN_ORDERS'), "the modules' variables are read");
  assert.deepEqual(new Set(VARIABLES.map((v) => v.name)), parsed);
  assert.equal(VARIABLES.length, parsed.size, 'each variable once');
  const defaults = loadConfig({});
  for (const variable of VARIABLES) {
    assert.ok(variable.description.length > 0 && !variable.description.includes('\n'), variable.name);
    if (variable.default === undefined) continue;
    assert.deepEqual(loadConfig({ [variable.name]: variable.default }), defaults, variable.name);
  }
});

test('Dockerfile: multi-stage, production dependencies and the built output only, non-root, probed, drained', () => {
  const stages = dockerfile();
  assert.ok(stages.length >= 2, 'multi-stage');
  const runtime = stages.at(-1)!;
  const build = stages.find((s) => all(s, 'RUN').some((r) => /\bnpm run build\b/.test(r)));
  assert.ok(build?.name && build !== runtime, 'a build stage runs npm run build');
  const deps = stages.find((s) => all(s, 'RUN').some((r) => /\bnpm ci --omit=dev\b/.test(r)));
  assert.ok(deps?.name, 'a stage installs with npm ci --omit=dev');

  const copies = all(runtime, 'COPY');
  assert.ok(
    copies.some((c) => c.includes(`--from=${deps.name}`) && /node_modules/.test(c)),
    'production node_modules',
  );
  assert.ok(
    copies.some((c) => c.includes(`--from=${build.name}`) && /\bdist\b/.test(c)),
    'the built output',
  );
  assert.ok(!copies.some((c) => c.includes(`--from=${build.name}`) && /node_modules/.test(c)), 'no dev deps');
  assert.ok(!copies.some((c) => /^\.\s/.test(c)), 'not the whole context (sources) into the runtime');
  assert.ok(!all(runtime, 'RUN').some((r) => /\bnpm (ci|install)\b/.test(r)), 'nothing installed at runtime');

  const user = all(runtime, 'USER').at(-1);
  assert.ok(user && !/^(root|0)(:|$)/.test(user), `non-root USER (${user})`);
  const [healthcheck] = all(runtime, 'HEALTHCHECK');
  assert.match(healthcheck ?? '', /CMD \["node", "-e", .*\/healthz/, 'HEALTHCHECK on /healthz with node');
  assert.deepEqual(all(runtime, 'STOPSIGNAL'), ['SIGTERM']);
  assert.match(
    all(runtime, 'CMD').at(-1) ?? '',
    /^\["node",.*"dist\/cli\.js", "serve"\]$/,
    'node itself as PID 1',
  );

  const env = all(runtime, 'ENV').join(' ');
  const drain = Number(/\bDRAIN_SECONDS=(\d+)/.exec(env)?.[1]);
  assert.ok(drain > 0, 'DRAIN_SECONDS is set');
  assert.ok(drain + SHUTDOWN_AFTER_DRAIN_S <= 30, "the whole shutdown fits Kubernetes' default 30 s grace");
  assert.match(env, /\bHOST=0\.0\.0\.0\b/, 'reachable from outside the container');
});

test('compose.yaml: PostgreSQL, Redis, two instances and a balancer that checks /readyz', () => {
  const compose = parse(read('compose.yaml')) as {
    services: Record<string, Record<string, unknown>>;
    configs?: Record<string, { content?: string }>;
  };
  const services = Object.entries(compose.services);
  const image = (s: Record<string, unknown>) => String(s.image ?? '');
  assert.ok(
    services.some(([, s]) => /^postgres:/.test(image(s))),
    'PostgreSQL',
  );
  assert.ok(
    services.some(([, s]) => /^redis:/.test(image(s))),
    'Redis',
  );

  const instances = services.filter(([, s]) => s.build === '.');
  assert.ok(instances.length >= 2, 'two or more instances of the service');
  for (const [name, s] of instances) {
    const env = s.environment as Record<string, string>;
    assert.match(
      env.DATABASE_URL ?? '',
      /^postgres(ql)?:\/\/.*@postgres:5432\//,
      `${name}: shared PostgreSQL`,
    );
    assert.match(env.REDIS_URL ?? '', /^redis:\/\/redis:6379/, `${name}: shared Redis`);
    assert.equal(s.ports, undefined, `${name}: reached through the balancer only`);
    const drain = Number(env.DRAIN_SECONDS ?? 5);
    const grace = Number(/^(\d+)s$/.exec(String(s.stop_grace_period))?.[1]);
    assert.ok(grace >= drain + SHUTDOWN_AFTER_DRAIN_S, `${name}: stop_grace_period covers the shutdown`);
  }

  const balancer = services.find(([, s]) => /^(haproxy|nginx|traefik|envoyproxy)/.test(image(s)));
  assert.ok(balancer, 'a balancer');
  const configs = (balancer[1].configs as { source: string }[] | undefined) ?? [];
  const content = configs.map((c) => compose.configs?.[c.source]?.content ?? '').join('\n');
  assert.match(content, /option httpchk GET \/readyz/, 'the balancer checks readiness');
  for (const [name] of instances) assert.match(content, new RegExp(`server ${name} ${name}:3000`), name);
});

test('CI runs the production install check besides npm test', () => {
  const ci = read('.ci/run');
  assert.match(ci, /^node scripts\/production-install-check\.mjs$/m);
  assert.match(ci, /^npm test$/m);
});
