/**
 * Starting the service: `npm start` runs what is built (and builds only when dist/ is missing or stale),
 * the start line names the address really bound, and METRICS_PORT moves /metrics to a listener of its own,
 * on real sockets, on every backend.
 * `npm test` builds first; run `npm run build` before running this file alone.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { backends } from './helpers.js';
import {
  CLI,
  cli,
  environmentFor,
  killAll,
  ROOT,
  serve,
  terminate,
  type Environment,
} from '../support/processes.js';

const SCRIPT = join(ROOT, 'scripts', 'build-if-stale.mjs');

function runScript(script: string): { status: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [script], { encoding: 'utf8' });
  return { status: result.status, stderr: result.stderr };
}

describe('npm start', () => {
  test('prestart builds only when needed, then start runs dist/cli.js serve with the heap capped', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    // The runtime check first (test/runtime.test.ts), then the build decision.
    assert.equal(pkg.scripts.prestart, 'node scripts/check-node.mjs && node scripts/build-if-stale.mjs');
    // The heap cap: docs/operations.md, "Overload" (without it V8 let a flood's garbage grow RSS to ~410 MB).
    assert.equal(
      pkg.scripts.start,
      'node --max-old-space-size=1024 --max-semi-space-size=16 --no-allocation-site-pretenuring dist/cli.js serve',
    );
    // npm ci builds a fresh clone, and builds nothing in a production install (no sources, no TypeScript).
    assert.equal(pkg.scripts.prepare, 'node scripts/build-if-stale.mjs');
  });

  test('this checkout, just built: starting compiles nothing', () => {
    const before = statSync(CLI).mtimeMs;
    const result = runScript(SCRIPT);
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stderr, '');
    assert.equal(statSync(CLI).mtimeMs, before);
  });

  test('a missing dist/ is built, a fresh one is not, an edited source rebuilds', (t) => {
    // A project of its own whose "build" only writes dist/cli.js, so the decision is what is tested.
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-prestart-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'scripts'));
    mkdirSync(join(dir, 'src', 'cli'), { recursive: true });
    copyFileSync(SCRIPT, join(dir, 'scripts', 'build-if-stale.mjs'));
    writeFileSync(join(dir, 'src', 'cli', 'a.ts'), 'export {};\n');
    writeFileSync(join(dir, 'tsconfig.json'), '{}\n');
    const build =
      "const fs = require('node:fs'); fs.mkdirSync('dist', { recursive: true }); " +
      "fs.appendFileSync('dist/cli.js', 'built\\n')";
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'fixture', private: true, scripts: { build: `node -e "${build}"` } }),
    );
    const script = join(dir, 'scripts', 'build-if-stale.mjs');
    const builds = () => readFileSync(join(dir, 'dist', 'cli.js'), 'utf8').split('\n').length - 1;

    let result = runScript(script);
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stderr, /dist\/ is missing: building/);
    assert.equal(builds(), 1);

    result = runScript(script);
    assert.equal(result.stderr, '');
    assert.equal(builds(), 1, 'up to date: no build');

    const later = new Date(Date.now() + 10_000);
    utimesSync(join(dir, 'src', 'cli', 'a.ts'), later, later);
    result = runScript(script);
    assert.match(result.stderr, /src\/ changed since the last build: building/);
    assert.equal(builds(), 2);
  });

  test('a production install (built output, no sources): nothing is built, whatever the times', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-prestart-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'scripts'));
    copyFileSync(SCRIPT, join(dir, 'scripts', 'build-if-stale.mjs'));
    // A build here would fail the test: `npm run build` has no script to run.
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'fixture', private: true }));
    const script = join(dir, 'scripts', 'build-if-stale.mjs');
    let result = runScript(script);
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stderr, '', 'nothing to build from (the dependency stage of a container build)');
    mkdirSync(join(dir, 'dist'));
    writeFileSync(join(dir, 'dist', 'cli.js'), '');
    const past = new Date(Date.now() - 3600_000);
    utimesSync(join(dir, 'dist', 'cli.js'), past, past);
    result = runScript(script);
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stderr, '');
  });

  test('METRICS_PORT equal to PORT is refused before anything listens', async () => {
    const out = await cli(['serve'], { PORT: '4999', METRICS_PORT: '4999', DATABASE_URL: 'sqlite::memory:' });
    assert.equal(out.code, 2);
    assert.match(out.stderr, /invalid configuration: METRICS_PORT: must differ from PORT \(4999\)/);
  });
});

for (const backend of await backends()) {
  describe(`start-up on real sockets [${backend.name}]`, () => {
    let environment: Environment;
    before(async () => {
      environment = await environmentFor(backend);
    });
    after(async () => {
      await killAll();
      await environment.cleanup();
    });

    test('HOST=0.0.0.0: the start line names 0.0.0.0 and the port bound, not 127.0.0.1', async () => {
      const server = await serve('wildcard', { ...environment.env, HOST: '0.0.0.0' });
      try {
        const match = /^http:\/\/0\.0\.0\.0:(\d+)\/v1$/.exec(server.base);
        assert.ok(match, `announced ${server.base}`);
        assert.doesNotMatch(server.stderr(), /127\.0\.0\.1/);
        const res = await fetch(`http://127.0.0.1:${match[1]}/healthz`);
        assert.equal(res.status, 200, 'reachable on the port it named');
      } finally {
        await terminate(server);
      }
    });

    test('METRICS_PORT: /metrics on its own listener, 404 on the API port, counting API requests', async () => {
      const server = await serve('metrics-port', { ...environment.env, METRICS_PORT: '0' });
      try {
        const announced = /Metrics on (http:\/\/127\.0\.0\.1:(\d+))\/metrics \(not on the API port\)/.exec(
          server.stderr(),
        );
        assert.ok(announced, server.stderr());
        const metricsOrigin = announced[1]!;
        assert.notEqual(new URL(metricsOrigin).port, new URL(server.origin).port);

        const onApi = await fetch(`${server.origin}/metrics`);
        assert.equal(onApi.status, 404);
        assert.equal(((await onApi.json()) as { code: string }).code, 'not_found');
        assert.equal((await fetch(`${server.origin}/healthz`)).status, 200, 'probes stay on the API port');

        const unkeyed = await fetch(`${server.base}/pets`);
        assert.equal(unkeyed.status, 401);
        const res = await fetch(`${metricsOrigin}/metrics`);
        assert.equal(res.status, 200);
        assert.match(res.headers.get('content-type')!, /^text\/plain/);
        const text = await res.text();
        const store = backend.name.includes('redis') ? 'redis' : 'memory';
        assert.match(text, new RegExp(`^pet_adoption_rate_limit_store_state\\{state="${store}"\\} 1$`, 'm'));
        assert.match(
          text,
          /^pet_adoption_http_request_duration_seconds_count\{method="GET",route="\/v1\/pets",status_code="401"\} 1$/m,
        );
        assert.equal((await fetch(`${metricsOrigin}/v1/pets`)).status, 404, 'only /metrics there');
      } finally {
        await terminate(server);
      }
    });

    test('without METRICS_PORT /metrics stays on the API port', async () => {
      const server = await serve('metrics-on-api', environment.env);
      try {
        assert.doesNotMatch(server.stderr(), /Metrics on/);
        const res = await fetch(`${server.origin}/metrics`);
        assert.equal(res.status, 200);
        assert.match(await res.text(), /^pet_adoption_rate_limit_store_state\{/m);
      } finally {
        await terminate(server);
      }
    });
  });
}
